#include "core/formats/MappedFile.h"

#include "core/formats/FormatError.h"
#include "core/util/Files.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace parallax {

MappedFile::MappedFile(const std::string& path) : m_path(path) {
    // O_NONBLOCK: a FIFO given by mistake must be refused below, not wait for a writer.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) throw FormatError(path, "cannot open it: " + errnoText(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        throw FormatError(path, "cannot read its size: " + errnoText(err));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        throw FormatError(path, S_ISDIR(st.st_mode) ? "is a folder, not a file" : "is not a regular file");
    }
    m_size = static_cast<uint64_t>(st.st_size);
    if (m_size > 0) {
        void* p = ::mmap(nullptr, static_cast<size_t>(m_size), PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            const int err = errno;
            ::close(fd);
            throw FormatError(path, "cannot map its " + std::to_string(m_size) + " bytes: " + errnoText(err));
        }
        m_data = static_cast<const unsigned char*>(p);
    }
    ::close(fd); // the mapping keeps the file open
}

MappedFile::~MappedFile() {
    release();
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : m_path(std::move(other.m_path)), m_data(std::exchange(other.m_data, nullptr)),
      m_size(std::exchange(other.m_size, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
    if (this != &other) {
        release();
        m_path = std::move(other.m_path);
        m_data = std::exchange(other.m_data, nullptr);
        m_size = std::exchange(other.m_size, 0);
    }
    return *this;
}

void MappedFile::release() {
    if (m_data) ::munmap(const_cast<unsigned char*>(m_data), static_cast<size_t>(m_size));
    m_data = nullptr;
    m_size = 0;
}

} // namespace parallax

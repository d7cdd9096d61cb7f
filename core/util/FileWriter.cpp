#include "core/util/FileWriter.h"

#include "core/util/Files.h"

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

namespace parallax {

FileWriter::FileWriter(const std::string& path) : m_path(path) {
    m_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (m_fd < 0) fail(Call::Open);
}

FileWriter::~FileWriter() {
    if (m_fd >= 0) ::close(m_fd);
}

void FileWriter::fail(Call call) {
    if (m_errno != 0) return; // the first error is the cause; later ones follow from it
    m_errno = errno != 0 ? errno : EIO;
    m_failed = call;
}

size_t FileWriter::write(const void* data, size_t size) {
    m_offered += static_cast<int64_t>(size);
    if (m_errno != 0) return size;
    const char* p = static_cast<const char*>(data);
    size_t left = size;
    while (left > 0) {
        const ssize_t n = ::write(m_fd, p, left);
        if (n < 0) {
            if (errno == EINTR) continue;
            fail(Call::Write);
            break;
        }
        if (n == 0) { // no progress and no error: treat as the disk refusing more
            errno = ENOSPC;
            fail(Call::Write);
            break;
        }
        p += n;
        left -= static_cast<size_t>(n);
        m_written += n;
    }
    return size;
}

bool FileWriter::finish() {
    if (m_fd < 0) return ok();
    if (m_errno == 0 && ::fsync(m_fd) != 0) fail(Call::Sync);
    if (::close(m_fd) != 0) fail(Call::Close);
    m_fd = -1;
    return ok();
}

std::string FileWriter::reason() const {
    return m_errno == 0 ? std::string() : errnoText(m_errno);
}

std::string FileWriter::describe(const std::string& what) const {
    if (m_errno == 0) return what + " (" + m_path + ") was written";
    if (m_failed == Call::Open) return reason() + " creating " + what + " (" + m_path + ")";
    std::string text = reason() + " writing " + what + " (" + m_path + "): " + std::to_string(m_written) + " of " +
                       std::to_string(m_offered) + " bytes written";
    if (m_failed == Call::Sync) text += ", fsync failed";
    if (m_failed == Call::Close) text += ", close failed";
    return text;
}

} // namespace parallax

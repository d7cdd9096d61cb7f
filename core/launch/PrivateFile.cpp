#include "core/launch/PrivateFile.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace parallax {

std::FILE* createPrivateFile(const std::string& path) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    std::FILE* file = fd >= 0 ? ::fdopen(fd, "w") : nullptr;
    if (!file) {
        const int error = errno;
        if (fd >= 0)
            ::close(fd);
        throw std::runtime_error("cannot create " + path + ": " + std::strerror(error));
    }
    return file;
}

void writePrivateFile(const std::string& path, const std::string& text) {
    std::FILE* out = createPrivateFile(path);
    const bool written = std::fwrite(text.data(), 1, text.size(), out) == text.size();
    const int error = errno;
    if (std::fclose(out) != 0 || !written)
        throw std::runtime_error("cannot write " + path + ": " + std::strerror(written ? errno : error));
}

} // namespace parallax

#pragma once

#include <cstdint>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

namespace parallax::testing {

// A size of this process from /proc/self/status, in bytes ("VmRSS", "VmHWM": the peak); -1 when
// the field is missing.
inline int64_t procStatusBytes(const std::string& field) {
    std::ifstream in("/proc/self/status");
    std::ostringstream text;
    text << in.rdbuf();
    const std::string status = text.str();
    const size_t at = status.find(field + ":");
    if (at == std::string::npos) return -1;
    return std::stoll(status.substr(at + field.size() + 1)) * 1024; // "VmHWM:   12345 kB"
}

// Resets the peak resident size (VmHWM) to the current one, so that a step's own peak can be read;
// false where /proc refuses.
inline bool resetPeakRss() {
    const int fd = ::open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const bool ok = ::write(fd, "5", 1) == 1;
    ::close(fd);
    return ok;
}

} // namespace parallax::testing

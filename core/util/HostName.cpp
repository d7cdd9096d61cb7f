#include "core/util/HostName.h"

#include <unistd.h>

namespace parallax {

std::string hostName() {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
    return buf;
}

} // namespace parallax

#include "core/util/Duration.h"

#include <cmath>
#include <cstdio>

namespace parallax {

std::string formatDuration(double seconds, const std::string& gap) {
    if (!std::isfinite(seconds) || seconds < 0) return "-";
    const long s = std::lround(seconds);
    struct Units {
        long size;
        const char* big;
        long smallSize;
        const char* small;
    };
    static constexpr Units kUnits[] = {{86400, "d", 3600, "h"}, {3600, "h", 60, "m"}, {60, "m", 1, "s"}};
    for (const Units& u : kUnits) {
        if (s < u.size) continue;
        char small[8];
        std::snprintf(small, sizeof small, "%02ld", (s % u.size) / u.smallSize);
        return std::to_string(s / u.size) + u.big + gap + small + u.small;
    }
    return std::to_string(s) + "s";
}

} // namespace parallax

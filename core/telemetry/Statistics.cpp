#include "core/telemetry/Statistics.h"

#include <algorithm>

namespace parallax {

std::optional<double> medianOf(std::vector<double> v) {
    if (v.empty()) return std::nullopt;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

} // namespace parallax

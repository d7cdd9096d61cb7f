#include "ui/models/RankActivityPalette.h"

#include <algorithm>
#include <cmath>

namespace parallax {

const std::vector<std::pair<double, QColor>>& RankActivityPalette::stops() {
    // Light enough at every stop for black cell text; no red, which marks alarms.
    static const std::vector<std::pair<double, QColor>> s = {
        {0.0, QColor(0x4f, 0x9b, 0xd9)},  // waits
        {0.5, QColor(0xd9, 0xef, 0xc2)},
        {1.0, QColor(0xfd, 0xa8, 0x4a)},  // computes
    };
    return s;
}

QColor RankActivityPalette::color(double share) {
    if (!std::isfinite(share)) return unknownColor();
    const double x = std::clamp(share, 0.0, 1.0);
    const auto& s = stops();
    for (size_t i = 1; i < s.size(); ++i) {
        if (x > s[i].first && i + 1 < s.size()) continue;
        const double f = (x - s[i - 1].first) / (s[i].first - s[i - 1].first);
        const QColor& a = s[i - 1].second;
        const QColor& b = s[i].second;
        const auto mix = [f](int u, int v) { return static_cast<int>(std::lround(u + (v - u) * f)); };
        return QColor(mix(a.red(), b.red()), mix(a.green(), b.green()), mix(a.blue(), b.blue()));
    }
    return s.back().second;
}

} // namespace parallax

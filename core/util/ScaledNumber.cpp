#include "core/util/ScaledNumber.h"

#include <cctype>
#include <cmath>

namespace parallax {

std::optional<double> parseScaledNumber(const std::string& text,
                                        const std::vector<std::pair<std::string, double>>& units) {
    size_t used = 0;
    double value = 0;
    try {
        value = std::stod(text, &used);
    } catch (const std::exception&) {
        return std::nullopt;
    }
    std::string unit = text.substr(used);
    unit.erase(0, unit.find_first_not_of(' '));
    for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!std::isfinite(value) || !(value > 0)) return std::nullopt;
    for (const auto& [name, scale] : units)
        if (unit == name) return value * scale;
    return std::nullopt;
}

} // namespace parallax

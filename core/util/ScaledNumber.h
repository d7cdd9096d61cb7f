#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace parallax {

// A positive, finite number followed by one of `units` (matched without regard to case, spaces
// between them allowed), times that unit's scale: "24GiB", "5 GB", "1000" when "" is a unit.
// nullopt for any other text. Units are given in lower case.
std::optional<double> parseScaledNumber(const std::string& text,
                                        const std::vector<std::pair<std::string, double>>& units);

} // namespace parallax

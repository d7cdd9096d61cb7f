#pragma once

#include <optional>
#include <vector>

namespace parallax {

// The median of `values` (the mean of the middle two for an even count); nullopt when empty.
std::optional<double> medianOf(std::vector<double> values);

} // namespace parallax

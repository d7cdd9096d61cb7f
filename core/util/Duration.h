#pragma once

#include <string>

namespace parallax {

// A length of time to the second, in its two largest units: "42s", "3m05s", "1h02m", "2d03h", with
// `gap` between the units ("3m 05s" with " "). "-" for a negative or non-finite length.
std::string formatDuration(double seconds, const std::string& gap = "");

} // namespace parallax

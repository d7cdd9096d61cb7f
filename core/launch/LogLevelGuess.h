#pragma once

#include <string_view>

namespace parallax {

// The level of an ordinary output line, from words that tools print: "error", "Traceback",
// "terminate called", "Segmentation fault", "Killed" -> "error"; "warn", "WARNING" -> "warn";
// anything else "info".
const char* guessLogLevel(std::string_view line);

} // namespace parallax

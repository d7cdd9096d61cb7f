#pragma once

#include "core/store/LogLevel.h"

#include <string_view>

namespace parallax {

// The level of an ordinary output line, from words that tools print: "error", "Traceback",
// "terminate called", "Segmentation fault", "Killed" -> error; "warn", "WARNING" -> warn;
// anything else info.
LogLevel::Value guessLogLevel(std::string_view line);

} // namespace parallax

#pragma once

#include "core/util/Duration.h" // formatDuration: "42s", "3m05s", "1h02m", "2d03h"

#include <string>

namespace parallax {

// Text for tables and progress lines. Missing values (NaN, or 0 timestamps) read "-".
std::string formatDateTime(double epoch);     // local "2024-05-01 12:03"
std::string formatClock(double epoch);        // local "12:03:04.123"
std::string formatLoss(double loss);          // "2.3142", "nan"
std::string formatRate(double perSecond);     // "12.3K"
std::string formatPercent(double fraction);   // 0.314 -> "31.4%"
// Shortest text that reads back to the same double ("0.1", "3e-05"); "nan", "inf", "-inf".
std::string formatExact(double value);

// A size as a person writes it ("24GiB", "800MiB", "1.5g", a number of bytes), in bytes. Throws
// CliError (usage) naming `option` otherwise.
double parseByteSize(const std::string& text, const std::string& option);

} // namespace parallax

#pragma once

#include <string>

namespace parallax {

// Log levels are stored as integers so that "warn and above" is a range: debug 0, info 1,
// warn 2, error 3.
namespace LogLevel {
inline constexpr int Debug = 0;
inline constexpr int Info = 1;
inline constexpr int Warn = 2;
inline constexpr int Error = 3;

// For rows: never fails. Empty or unknown names are info; common aliases map to the nearest level
// (trace -> debug, warning -> warn, err/fatal/critical -> error), case-insensitively.
int fromName(const std::string& level);
// For queries, which must not guess: -1 unless `level` is debug, info, warn or error.
int fromNameStrict(const std::string& level);
const char* name(int value);
} // namespace LogLevel

} // namespace parallax

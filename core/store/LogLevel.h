#pragma once

#include <string>

namespace parallax {

// Log levels are stored as integers so that "warn and above" is a range: debug 0, info 1,
// warn 2, error 3. Rows and notices carry a Value; names exist only on the wire, in files and
// on screen.
namespace LogLevel {
enum Value : int { Debug = 0, Info = 1, Warn = 2, Error = 3 };

// For rows: never fails. Empty or unknown names are info; common aliases map to the nearest level
// (trace -> debug, warning -> warn, err/fatal/critical -> error), case-insensitively.
Value fromName(const std::string& level);
// For queries, which must not guess: -1 unless `level` is debug, info, warn or error.
int fromNameStrict(const std::string& level);
// A stored integer: out-of-range values (a newer or damaged store) read as info.
Value fromInt(long long value);
const char* name(int value);
} // namespace LogLevel

} // namespace parallax

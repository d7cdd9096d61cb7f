#pragma once

#include <string>
#include <string_view>

namespace parallax {

// Whether `text` is well-formed UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF)
// without NUL bytes, which the store and the console's text views would cut at.
bool isCleanUtf8(std::string_view text);
// `text` with each ill-formed sequence and each NUL replaced by U+FFFD.
std::string sanitizeUtf8(std::string_view text);
// `text` as a terminal may show it: what a rank, a spec or a host wrote cannot move the cursor,
// clear the screen or reorder what follows. Control characters (C0 but tab, DEL, C1) become
// "\xNN", bidirectional controls (U+061C, U+200E/F, U+202A-E, U+2066-9) "\u{NNNN}", ill-formed
// UTF-8 U+FFFD; the rest is unchanged.
std::string terminalSafe(std::string_view text);

} // namespace parallax

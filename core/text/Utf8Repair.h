#pragma once

#include <string>
#include <string_view>

namespace parallax {

// Well-formed UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF, nothing cut short.
bool isValidUtf8(std::string_view text);

// `text` with each maximal ill-formed subpart replaced by one U+FFFD, the substitution Unicode
// recommends (chapter 3, "U+FFFD Substitution of Maximal Subparts") and that both a browser's
// TextDecoder and Rust's String::from_utf8_lossy make: "\xE2\x82" (a cut three-byte form) is one
// U+FFFD, "\xC0\x80" (overlong) two, "\xED\xA0\x80" (a surrogate) three. NUL bytes stay.
std::string repairUtf8(std::string_view text);

} // namespace parallax

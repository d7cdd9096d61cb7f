#pragma once

#include <string>
#include <string_view>

namespace parallax {

// Whether `text` is well-formed UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF)
// without NUL bytes, which the store and the console's text views would cut at.
bool isCleanUtf8(std::string_view text);
// `text` with each ill-formed sequence and each NUL replaced by U+FFFD.
std::string sanitizeUtf8(std::string_view text);

} // namespace parallax

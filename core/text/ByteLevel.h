#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace parallax {

// The byte-level alphabet of GPT-2 and its descendants (Llama 3, Qwen): each of the 256 byte values
// is one printable character, so that a vocabulary of strings covers every byte sequence. Printable
// Latin-1 bytes stand for themselves; the other 68 (controls, space, NBSP, soft hyphen) become
// U+0100 onwards, in byte order: space is "Ġ" (U+0120), LF "Ċ" (U+010A).
class ByteLevel {
public:
    static const ByteLevel& instance();

    // The character (as UTF-8) that stands for `byte`.
    const std::string& charFor(uint8_t byte) const { return m_chars[byte]; }
    // The byte a character of the alphabet stands for, or -1.
    int byteFor(char32_t codePoint) const;
    // `token` (a vocabulary string) as the bytes it stands for; false when a character of it is not
    // in the alphabet (then `bytes` is left as it was).
    bool decode(std::string_view token, std::string& bytes) const;

private:
    ByteLevel();
    std::array<std::string, 256> m_chars;
    std::array<int16_t, 512> m_bytes; // code point (all below 512) -> byte, or -1
};

} // namespace parallax

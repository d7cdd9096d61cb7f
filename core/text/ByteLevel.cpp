#include "core/text/ByteLevel.h"

namespace parallax {

namespace {

std::string utf8(char32_t c) {
    std::string s;
    if (c < 0x80) {
        s += static_cast<char>(c);
    } else {
        s += static_cast<char>(0xC0 | (c >> 6));
        s += static_cast<char>(0x80 | (c & 0x3F));
    }
    return s;
}

bool standsForItself(int b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

} // namespace

ByteLevel::ByteLevel() {
    m_bytes.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
        const char32_t c = standsForItself(b) ? static_cast<char32_t>(b) : next++;
        m_chars[b] = utf8(c);
        m_bytes[c] = static_cast<int16_t>(b);
    }
}

const ByteLevel& ByteLevel::instance() {
    static const ByteLevel alphabet;
    return alphabet;
}

int ByteLevel::byteFor(char32_t codePoint) const {
    return codePoint < m_bytes.size() ? m_bytes[codePoint] : -1;
}

bool ByteLevel::decode(std::string_view token, std::string& bytes) const {
    std::string out;
    out.reserve(token.size());
    for (size_t i = 0; i < token.size();) {
        const auto b0 = static_cast<uint8_t>(token[i]);
        char32_t c;
        if (b0 < 0x80) {
            c = b0;
            i += 1;
        } else if ((b0 & 0xE0) == 0xC0 && i + 1 < token.size()) {
            c = (static_cast<char32_t>(b0 & 0x1F) << 6) | (static_cast<uint8_t>(token[i + 1]) & 0x3F);
            i += 2;
        } else {
            return false; // three bytes and more: above U+07FF, outside the alphabet
        }
        const int byte = byteFor(c);
        if (byte < 0)
            return false;
        out += static_cast<char>(byte);
    }
    bytes += out;
    return true;
}

} // namespace parallax

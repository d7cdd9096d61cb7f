#include "core/launch/Utf8.h"

#include <cstdint>
#include <cstring>

namespace parallax {

namespace {

// Length of the well-formed sequence starting at text[i], or 0.
size_t sequenceLength(std::string_view text, size_t i) {
    const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
    const uint8_t b0 = byte(i);
    const size_t left = text.size() - i;
    if (b0 < 0x80)
        return b0 == 0 ? 0 : 1;
    const auto cont = [&](size_t k) { return (byte(k) & 0xC0) == 0x80; };
    if (b0 >= 0xC2 && b0 <= 0xDF)
        return left >= 2 && cont(i + 1) ? 2 : 0;
    if (b0 >= 0xE0 && b0 <= 0xEF) {
        if (left < 3 || !cont(i + 1) || !cont(i + 2))
            return 0;
        const uint8_t b1 = byte(i + 1);
        if (b0 == 0xE0 && b1 < 0xA0)
            return 0; // overlong
        if (b0 == 0xED && b1 >= 0xA0)
            return 0; // surrogate
        return 3;
    }
    if (b0 >= 0xF0 && b0 <= 0xF4) {
        if (left < 4 || !cont(i + 1) || !cont(i + 2) || !cont(i + 3))
            return 0;
        const uint8_t b1 = byte(i + 1);
        if (b0 == 0xF0 && b1 < 0x90)
            return 0; // overlong
        if (b0 == 0xF4 && b1 >= 0x90)
            return 0; // above U+10FFFF
        return 4;
    }
    return 0;
}

} // namespace

bool isCleanUtf8(std::string_view text) {
    size_t i = 0;
    const size_t n = text.size();
    while (i < n) {
        // ASCII fast path, 8 bytes at a time.
        while (i + 8 <= n) {
            uint64_t word;
            std::memcpy(&word, text.data() + i, 8);
            const bool highBit = word & 0x8080808080808080ULL;
            const bool zeroByte = (word - 0x0101010101010101ULL) & ~word & 0x8080808080808080ULL;
            if (highBit || zeroByte)
                break;
            i += 8;
        }
        if (i >= n)
            break;
        const size_t len = sequenceLength(text, i);
        if (len == 0)
            return false;
        i += len;
    }
    return true;
}

std::string sanitizeUtf8(std::string_view text) {
    std::string out;
    out.reserve(text.size() + 8);
    size_t i = 0;
    while (i < text.size()) {
        const size_t len = sequenceLength(text, i);
        if (len == 0) {
            out += "\xEF\xBF\xBD";
            ++i;
        } else {
            out.append(text.data() + i, len);
            i += len;
        }
    }
    return out;
}

namespace {

bool isBidiControl(uint32_t c) {
    return c == 0x061C || c == 0x200E || c == 0x200F || (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
}

uint32_t codePoint(std::string_view text, size_t i, size_t len) {
    const auto b = [&](size_t k) { return static_cast<uint32_t>(static_cast<uint8_t>(text[i + k])); };
    if (len == 1) return b(0);
    if (len == 2) return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
    if (len == 3) return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
}

} // namespace

std::string terminalSafe(std::string_view text) {
    static const char* hex = "0123456789ABCDEF";
    std::string out;
    out.reserve(text.size());
    size_t i = 0;
    while (i < text.size()) {
        const size_t len = sequenceLength(text, i);
        if (len == 0 && text[i] != '\0') {
            out += "\xEF\xBF\xBD";
            ++i;
            continue;
        }
        const uint32_t c = len == 0 ? 0 : codePoint(text, i, len);
        const size_t step = len == 0 ? 1 : len;
        if ((c < 0x20 && c != '\t') || c == 0x7F || (c >= 0x80 && c <= 0x9F)) {
            out += "\\x";
            out += hex[(c >> 4) & 0xF];
            out += hex[c & 0xF];
        } else if (isBidiControl(c)) {
            out += "\\u{";
            for (int shift = 12; shift >= 0; shift -= 4) out += hex[(c >> shift) & 0xF];
            out += "}";
        } else {
            out.append(text.data() + i, step);
        }
        i += step;
    }
    return out;
}

} // namespace parallax

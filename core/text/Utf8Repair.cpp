#include "core/text/Utf8Repair.h"

#include <cstdint>
#include <cstring>

namespace parallax {

namespace {

// The well-formed sequence at text[i]: its length, or 0 with `subpart` set to the length of the
// maximal ill-formed subpart there (at least 1). Table 3-7 of the Unicode standard gives the
// second byte's range for each lead byte; every later byte is 80..BF.
size_t sequenceAt(std::string_view text, size_t i, size_t& subpart) {
    const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
    const uint8_t lead = byte(i);
    subpart = 1;
    if (lead < 0x80)
        return 1;
    size_t length = 0;
    uint8_t low = 0x80, high = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
        length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        length = 3;
        if (lead == 0xE0) low = 0xA0;       // overlong below
        else if (lead == 0xED) high = 0x9F; // surrogates above
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        length = 4;
        if (lead == 0xF0) low = 0x90;       // overlong below
        else if (lead == 0xF4) high = 0x8F; // above U+10FFFF
    } else {
        return 0; // a continuation byte or a lead byte no well-formed sequence has
    }
    for (size_t k = 1; k < length; ++k) {
        if (i + k >= text.size())
            return 0;
        const uint8_t b = byte(i + k);
        const uint8_t lo = k == 1 ? low : 0x80;
        const uint8_t hi = k == 1 ? high : 0xBF;
        if (b < lo || b > hi)
            return 0;
        subpart = k + 1;
    }
    return length;
}

// Bytes from `i` on that are ASCII, 8 at a time.
size_t skipAscii(std::string_view text, size_t i) {
    while (i + 8 <= text.size()) {
        uint64_t word;
        std::memcpy(&word, text.data() + i, 8);
        if (word & 0x8080808080808080ULL)
            break;
        i += 8;
    }
    while (i < text.size() && static_cast<uint8_t>(text[i]) < 0x80)
        ++i;
    return i;
}

} // namespace

bool isValidUtf8(std::string_view text) {
    size_t i = skipAscii(text, 0);
    while (i < text.size()) {
        size_t subpart = 0;
        const size_t length = sequenceAt(text, i, subpart);
        if (length == 0)
            return false;
        i = skipAscii(text, i + length);
    }
    return true;
}

std::string repairUtf8(std::string_view text) {
    std::string out;
    out.reserve(text.size() + 16);
    size_t i = 0;
    while (i < text.size()) {
        const size_t ascii = skipAscii(text, i);
        out.append(text.data() + i, ascii - i);
        i = ascii;
        if (i >= text.size())
            break;
        size_t subpart = 0;
        const size_t length = sequenceAt(text, i, subpart);
        if (length == 0) {
            out += "\xEF\xBF\xBD";
            i += subpart;
        } else {
            out.append(text.data() + i, length);
            i += length;
        }
    }
    return out;
}

} // namespace parallax

#include "core/image/ExifOrientation.h"

#include <cstring>
#include <string_view>

namespace parallax {

namespace {

constexpr uint16_t kOrientationTag = 0x0112;
constexpr uint16_t kShort = 3;
constexpr uint16_t kLong = 4;

class TiffReader {
public:
    TiffReader(const uint8_t* data, size_t size, bool little) : m_data(data), m_size(size), m_little(little) {}
    bool u16(size_t at, uint16_t& out) const {
        if (at > m_size || m_size - at < 2) return false;
        const uint8_t* p = m_data + at;
        out = m_little ? uint16_t(p[0] | p[1] << 8) : uint16_t(p[0] << 8 | p[1]);
        return true;
    }
    bool u32(size_t at, uint32_t& out) const {
        if (at > m_size || m_size - at < 4) return false;
        const uint8_t* p = m_data + at;
        out = m_little ? uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24
                       : uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
        return true;
    }

private:
    const uint8_t* m_data;
    size_t m_size;
    bool m_little;
};

int validOrientation(uint32_t value) { return value >= 1 && value <= 8 ? static_cast<int>(value) : 1; }

} // namespace

int exifOrientation(const uint8_t* data, size_t size) {
    if (data == nullptr) return 1;
    if (size >= 6 && std::memcmp(data, "Exif\0\0", 6) == 0) {
        data += 6;
        size -= 6;
    }
    if (size < 8) return 1;
    bool little;
    if (std::memcmp(data, "II*\0", 4) == 0) little = true;
    else if (std::memcmp(data, "MM\0*", 4) == 0) little = false;
    else return 1;
    const TiffReader tiff(data, size, little);
    uint32_t ifd = 0;
    uint16_t entries = 0;
    if (!tiff.u32(4, ifd) || !tiff.u16(ifd, entries)) return 1;
    for (uint32_t i = 0; i < entries; ++i) {
        const size_t entry = size_t(ifd) + 2 + size_t(i) * 12;
        uint16_t tag = 0, type = 0;
        uint32_t count = 0;
        if (!tiff.u16(entry, tag) || !tiff.u16(entry + 2, type) || !tiff.u32(entry + 4, count)) return 1;
        if (tag != kOrientationTag) continue;
        if (count < 1) return 1;
        if (type == kShort) {
            uint16_t value = 0;
            return tiff.u16(entry + 8, value) ? validOrientation(value) : 1;
        }
        if (type == kLong) {
            uint32_t value = 0;
            return tiff.u32(entry + 8, value) ? validOrientation(value) : 1;
        }
        return 1;
    }
    return 1;
}

int xmpOrientation(const uint8_t* data, size_t size) {
    if (data == nullptr) return 1;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const std::string_view key = "tiff:Orientation";
    for (size_t at = text.find(key); at != std::string_view::npos; at = text.find(key, at + 1)) {
        size_t digit = at + key.size();
        if (text.substr(digit, 2) == "=\"") digit += 2;
        else if (text.substr(digit, 1) == ">") digit += 1;
        else continue;
        if (digit < text.size() && text[digit] >= '0' && text[digit] <= '9') return validOrientation(text[digit] - '0');
    }
    return 1;
}

template <class Sample>
Pixels<Sample> orientPixels(Pixels<Sample> in, int orientation) {
    if (orientation < 2 || orientation > 8) return in;
    const int w = in.width, h = in.height, c = in.channels;
    Pixels<Sample> out;
    out.channels = c;
    out.width = orientationSwapsSides(orientation) ? h : w;
    out.height = orientationSwapsSides(orientation) ? w : h;
    out.samples.resize(in.samples.size());
    for (int y = 0; y < out.height; ++y) {
        Sample* dst = out.row(y);
        for (int x = 0; x < out.width; ++x) {
            // The stored pixel (sx, sy) shown at (x, y).
            int sx = x, sy = y;
            switch (orientation) {
            case 2: sx = w - 1 - x; break;
            case 3: sx = w - 1 - x; sy = h - 1 - y; break;
            case 4: sy = h - 1 - y; break;
            case 5: sx = y; sy = x; break;
            case 6: sx = y; sy = h - 1 - x; break;
            case 7: sx = w - 1 - y; sy = h - 1 - x; break;
            case 8: sx = w - 1 - y; sy = x; break;
            }
            const Sample* src = in.row(sy) + static_cast<size_t>(sx) * c;
            for (int k = 0; k < c; ++k) dst[static_cast<size_t>(x) * c + k] = src[k];
        }
    }
    return out;
}

template Pixels<uint8_t> orientPixels(Pixels<uint8_t>, int);
template Pixels<uint16_t> orientPixels(Pixels<uint16_t>, int);

} // namespace parallax

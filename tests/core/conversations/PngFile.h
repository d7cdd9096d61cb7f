#pragma once

// 8-bit RGB PNG files written by the tests themselves (zlib's deflate, filter 0 on every row), so that
// the data tests need no image tool: the pictures are smooth ramps under seeded noise.

#include <zlib.h>

#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace parallax::testing {

inline void writePngChunk(std::ofstream& out, const char* type, const std::vector<uint8_t>& data) {
    auto be32 = [&out](uint32_t v) {
        const char b[4] = {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
        out.write(b, 4);
    };
    be32(static_cast<uint32_t>(data.size()));
    out.write(type, 4);
    out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
    uLong crc = crc32(0, reinterpret_cast<const Bytef*>(type), 4);
    if (!data.empty()) crc = crc32(crc, data.data(), static_cast<uInt>(data.size())); // a null buffer resets it
    be32(static_cast<uint32_t>(crc));
}

// A w x h RGB picture: colour ramps and noise from `seed`.
inline std::vector<uint8_t> rampPicture(int w, int h, unsigned seed) {
    std::mt19937 random(seed);
    std::vector<uint8_t> rgb(static_cast<size_t>(w) * h * 3);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            const int noise = static_cast<int>(random() % 64);
            uint8_t* p = &rgb[(static_cast<size_t>(y) * w + x) * 3];
            p[0] = static_cast<uint8_t>((x * 255 / w + noise) % 256);
            p[1] = static_cast<uint8_t>((y * 255 / h + 2 * noise) % 256);
            p[2] = static_cast<uint8_t>((x + y + 3 * noise) % 256);
        }
    return rgb;
}

inline void writePng(const std::string& path, int w, int h, const std::vector<uint8_t>& rgb) {
    std::vector<uint8_t> raw;
    raw.reserve(static_cast<size_t>(h) * (1 + w * 3));
    for (int y = 0; y < h; ++y) {
        raw.push_back(0);
        raw.insert(raw.end(), rgb.begin() + static_cast<long>(y) * w * 3, rgb.begin() + static_cast<long>(y + 1) * w * 3);
    }
    uLongf size = compressBound(static_cast<uLong>(raw.size()));
    std::vector<uint8_t> packed(size);
    compress(packed.data(), &size, raw.data(), static_cast<uLong>(raw.size()));
    packed.resize(size);
    std::ofstream out(path, std::ios::binary);
    out.write("\x89PNG\r\n\x1a\n", 8);
    const std::vector<uint8_t> header = {uint8_t(w >> 24), uint8_t(w >> 16), uint8_t(w >> 8), uint8_t(w),
                                         uint8_t(h >> 24), uint8_t(h >> 16), uint8_t(h >> 8), uint8_t(h),
                                         8, 2, 0, 0, 0};
    writePngChunk(out, "IHDR", header);
    writePngChunk(out, "IDAT", packed);
    writePngChunk(out, "IEND", {});
}

inline void writeRampPng(const std::string& path, int w, int h, unsigned seed) { writePng(path, w, h, rampPicture(w, h, seed)); }

} // namespace parallax::testing

#pragma once

#include "core/image/ImageFormat.h"

#include <cstdint>
#include <vector>

namespace parallax {

// Pixels in memory: `height` rows of `width` pixels, top row first, each pixel `channels` samples
// in a row (RGB: R, G, B). Decoded images are RGB; resizing takes 1 to 4 channels.
template <class Sample>
struct Pixels {
    int width = 0;
    int height = 0;
    int channels = 0;
    std::vector<Sample> samples; // width * height * channels

    size_t rowSamples() const { return static_cast<size_t>(width) * static_cast<size_t>(channels); }
    const Sample* row(int y) const { return samples.data() + static_cast<size_t>(y) * rowSamples(); }
    Sample* row(int y) { return samples.data() + static_cast<size_t>(y) * rowSamples(); }
};

using Image = Pixels<uint8_t>;    // 8 bits a sample
using Image16 = Pixels<uint16_t>; // 16 bits a sample (16-bit PNGs, kept on request)

// What a file holds, read from its headers without decoding the pixels.
struct ImageInfo {
    ImageFormat format = ImageFormat::Jpeg;
    int width = 0;           // as shown: after the EXIF orientation (5 to 8 swap the sides)
    int height = 0;
    int storedWidth = 0;     // as stored in the file
    int storedHeight = 0;
    int orientation = 1;     // EXIF orientation 1 to 8 (1: as stored; an absent or invalid tag reads 1)
    int bitDepth = 8;        // bits a sample: 8, or 16 for 16-bit PNGs (1, 2 and 4-bit PNGs read 8)
    int storedChannels = 3;  // 1 gray, 2 gray + alpha, 3 colour, 4 colour + alpha or CMYK
    bool alpha = false;      // an alpha channel, or a PNG's tRNS transparency
    bool animated = false;   // an animated WebP (its first frame is decoded)
};

struct DecodedImage {
    ImageInfo info;
    Image rgb;     // 8-bit RGB, oriented
    Image16 rgb16; // 16-bit RGB, oriented: only for a 16-bit source with DecodeOptions::keep16
};

} // namespace parallax

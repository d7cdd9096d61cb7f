#pragma once

#include "core/image/ImageDecoder.h"

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// How a decoder hands its samples over, before they become RGB (PixelConversion.h).
enum class SampleLayout { Gray, GrayAlpha, Rgb, Rgba, InvertedCmyk };

int layoutChannels(SampleLayout layout);

// A decoder's output: the stored orientation, samples interleaved by `layout`, 8 or 16 bits.
struct RawImage {
    int width = 0;
    int height = 0;
    SampleLayout layout = SampleLayout::Rgb;
    int bits = 8;
    std::vector<uint8_t> samples8;   // bits == 8
    std::vector<uint16_t> samples16; // bits == 16
};

// Throws ImageError when the sides an image declares are zero or hold more than options.maxPixels
// pixels; called on the header, before anything of the image's size is allocated.
void checkDeclaredSize(uint64_t width, uint64_t height, const DecodeOptions& options, const std::string& file,
                       ImageFormat format);

// The decoders, each for its format (JpegDecoder.cpp, PngDecoder.cpp, WebpDecoder.cpp): the header
// alone, or the samples with the header (`info`, with its orientation, the sides as stored).
ImageInfo jpegInfo(const uint8_t* data, size_t size, const std::string& file, const DecodeOptions& options);
RawImage decodeJpeg(const uint8_t* data, size_t size, const std::string& file, const DecodeOptions& options,
                    ImageInfo& info);
ImageInfo pngInfo(const uint8_t* data, size_t size, const std::string& file, const DecodeOptions& options);
RawImage decodePng(const uint8_t* data, size_t size, const std::string& file, const DecodeOptions& options,
                   ImageInfo& info);
ImageInfo webpInfo(const uint8_t* data, size_t size, const std::string& file, const DecodeOptions& options);
RawImage decodeWebp(const uint8_t* data, size_t size, const std::string& file, const DecodeOptions& options,
                    ImageInfo& info);

} // namespace parallax

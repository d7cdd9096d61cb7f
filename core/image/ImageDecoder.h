#pragma once

#include "core/image/Image.h"

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// The most pixels an image may declare: PIL's decompression-bomb limit (2 x 89,478,485, where
// Image.open raises DecompressionBombError). A larger image is refused from its header, before
// anything of its size is allocated.
constexpr uint64_t kMaxImagePixels = 178'956'970;
// The largest image file read.
constexpr uint64_t kMaxImageFileBytes = uint64_t(1) << 30;

// How transparency becomes RGB.
enum class AlphaMode {
    // Alpha is dropped and the stored colours kept, as PIL's convert("RGB") does (the Hugging Face
    // image processors' convert_rgb and load_image).
    Drop,
    // Composited over white, each sample round((c * a + 255 * (255 - a)) / 255), as
    // qwen_vl_utils' to_rgb does for RGBA images (here for every kind of transparency).
    OverWhite,
};

struct DecodeOptions {
    uint64_t maxPixels = kMaxImagePixels;
    AlphaMode alpha = AlphaMode::Drop;
    bool keep16 = false; // also hand out 16-bit RGB (DecodedImage::rgb16) for 16-bit sources
};

// Decodes a JPEG, PNG or WebP image, told by its bytes, to 8-bit RGB with its EXIF orientation
// applied, as Hugging Face's processors load images: PIL.Image.open, ImageOps.exif_transpose,
// convert("RGB"). 16-bit samples keep their high byte (as PIL reads 16-bit colour PNGs); gray is
// repeated in R, G and B; CMYK JPEGs are taken as Adobe-inverted, as PIL and ImageMagick take them;
// an animated WebP gives its first frame; colour profiles and gamma are not applied. Throws
// ImageError naming `file` (only used in messages) and the reason; never exits, hangs or allocates
// more than the image's own size (at most options.maxPixels pixels).
DecodedImage decodeImage(const uint8_t* data, size_t size, const std::string& file, const DecodeOptions& options = {});
DecodedImage decodeImageFile(const std::string& path, const DecodeOptions& options = {});

// The headers alone: format, sides (oriented), orientation, depth, channels. Throws ImageError for
// what the headers show to be wrong; a file whose pixel data is damaged may still pass here.
ImageInfo readImageInfo(const uint8_t* data, size_t size, const std::string& file, const DecodeOptions& options = {});
ImageInfo readImageInfoFile(const std::string& path, const DecodeOptions& options = {});

// The bytes of an image file. Throws ImageError: missing, not a regular file, unreadable, or larger
// than kMaxImageFileBytes.
std::vector<uint8_t> readImageBytes(const std::string& path);

} // namespace parallax

#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace parallax {

// The image formats read (core/image): told from the file's first bytes, never from its name.
enum class ImageFormat { Jpeg, Png, Webp };

const char* imageFormatName(ImageFormat format); // "JPEG", "PNG", "WebP"

// The format of the `size` bytes at `data`. Throws ImageError naming `file` and what the bytes are
// instead: empty, a format that is known but not read (GIF, BMP, TIFF, HEIF/AVIF, ...), text, or
// unknown, with the first bytes shown.
ImageFormat sniffImageFormat(const uint8_t* data, size_t size, const std::string& file);

} // namespace parallax

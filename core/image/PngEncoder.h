#pragma once

#include "core/image/Image.h"

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// An 8-bit RGB image (3 channels) as PNG bytes, through libpng at its default compression. Throws
// ImageError naming `what` (only used in messages) when the image is empty, is not 3-channel, its
// samples do not fill its sides, or libpng refuses it.
std::vector<uint8_t> encodePng(const Image& rgb, const std::string& what = "image");

// The same, written to `path` through a temporary file beside it that is renamed over it, so that
// a reader never sees half a file. Throws ImageError naming the path when it cannot be written.
void writePngFile(const Image& rgb, const std::string& path);

} // namespace parallax

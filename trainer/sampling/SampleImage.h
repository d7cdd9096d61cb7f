#pragma once

#include "core/image/Image.h"

#include <torch/torch.h>

#include <string>

namespace parallax {

// A decoded image (1, 3, H, W) or (3, H, W) in [-1, 1], on any device and in any float dtype, as
// 8-bit RGB the way diffusers' image processor turns it into PIL: round(clamp(x / 2 + 0.5, 0, 1)
// x 255), in float32. Throws std::invalid_argument naming the shape when it is not one RGB image.
Image sampleToRgb(const torch::Tensor& image);

// The same, written as a PNG file (core/image/PngEncoder.h); throws ImageError naming the path.
void writeSamplePng(const torch::Tensor& image, const std::string& path);

} // namespace parallax

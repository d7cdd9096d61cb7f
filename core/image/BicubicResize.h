#pragma once

#include "core/image/Image.h"

namespace parallax {

// `image` resized to width x height as PIL's Image.resize((width, height), Image.BICUBIC) resizes
// an 8-bit "L" or "RGB" image, sample for sample (the Hugging Face image processors resize
// through it): a separable convolution, rows first, with the cubic kernel of a = -0.5 whose support
// (2 pixels) widens by the scale when shrinking (antialiasing), weights normalized to sum 1 and
// rounded to 22 fraction bits, each pass rounded and clamped to 0..255. Each channel is filtered
// on its own (PIL premultiplies RGBA by alpha first; this does not). Throws std::invalid_argument
// for an empty image or sides below 1, or more than kMaxImagePixels pixels out.
Image resizeBicubic(const Image& image, int width, int height);

// The same with PIL's Image.LANCZOS (a windowed sinc of three lobes, support 3 pixels), as
// diffusers' VaeImageProcessor.resize resizes a PIL image by default.
Image resizeLanczos(const Image& image, int width, int height);

} // namespace parallax

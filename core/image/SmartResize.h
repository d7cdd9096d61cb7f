#pragma once

#include <cstdint>

namespace parallax {

// Qwen2-VL's and Qwen2.5-VL's image size rule. The defaults are those of Qwen2.5-VL's published
// preprocessor_config.json (patch 14 merged 2 x 2: factor 28; min_pixels 3136; max_pixels
// 12845056); transformers' smart_resize function itself defaults max_pixels to 1003520.
struct SmartResizeRule {
    int64_t factor = 28;
    int64_t minPixels = 56 * 56;
    int64_t maxPixels = 12'845'056;
};

struct ImageSides {
    int64_t height = 0;
    int64_t width = 0;
};

// The sides an image of height x width is resized to, as transformers' smart_resize computes them:
// both multiples of rule.factor, the pixels between minPixels and maxPixels where rounding allows,
// the aspect kept as nearly as it can be. Python's arithmetic is kept: round() halves to even, the
// quotients are doubles. Throws std::invalid_argument for a side below 1, a factor below 1, or an
// aspect ratio above 200 (as transformers raises).
ImageSides smartResize(int64_t height, int64_t width, const SmartResizeRule& rule = {});

} // namespace parallax

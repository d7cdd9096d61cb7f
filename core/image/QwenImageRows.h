#pragma once

#include "core/image/Image.h"
#include "core/image/SmartResize.h"

#include <cstdint>
#include <vector>

namespace parallax {

// One image as Qwen2-VL's and Qwen2.5-VL's image processor hands it to the vision tower (the PIL
// backend): resized by smartResize (factor patch x merge) with Pillow's bicubic, rescaled and
// normalized with CLIP's mean and std, repeated to fill the temporal patch, and cut into rows of
// 3 x temporal x patch x patch values, ordered (frame group, merged row, merged column, row in the
// unit, column in the unit), each row (channel, frame, y, x).
struct QwenImageRows {
    std::vector<float> values; // rows() x rowValues()
    int64_t frames = 1;        // grid_thw: frame groups, rows and columns of patches
    int64_t rows = 0;
    int64_t columns = 0;
    int64_t rowValues = 0;
    int64_t patchRows() const { return frames * rows * columns; }
};

struct QwenImageRule {
    SmartResizeRule resize;   // factor = patch x merge
    int64_t patch = 14;
    int64_t merge = 2;
    int64_t temporal = 2;
};

// `rgb`: an 8-bit RGB image (decodeImage's). Throws std::invalid_argument as smartResize does.
QwenImageRows qwenImageRows(const Image& rgb, const QwenImageRule& rule = {});

} // namespace parallax

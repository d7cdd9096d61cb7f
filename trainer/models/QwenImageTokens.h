#pragma once

#include "core/spec/ModelDims.h"

#include <torch/torch.h>

#include <vector>

namespace parallax {

// One image's grid: frames, and rows and columns of merged units (merge x merge patches).
struct MergedGrid {
    int64_t frames, rows, columns;
    int64_t tokens() const { return frames * rows * columns; }
};
// The rows of image_grid_thw (images, 3: frames, rows, columns in patches); throws naming the image
// whose rows or columns are no whole number of merge x merge units. Undefined: no image.
std::vector<MergedGrid> mergedGrids(const torch::Tensor& imageGrid, int64_t merge);

// Where the images of a qwen2_5_vl batch sit among its tokens, as the published model finds them:
// an image is a <|vision_start|> token followed by <|image_pad|>, and takes the next
// frames x rows x columns / merge^2 <|image_pad|> tokens (one per merged unit), its grid being the
// next row of `imageGrid` (images belong to samples in order). `tokens` (B, T) and
// `attentionMask` (B, T; undefined: no padding) on the host or not; `sampleIndex` names samples in
// errors. Throws std::invalid_argument naming the sample when the pads and the grid disagree: a
// count that differs, pads under padding or outside an image's run, grid rows left over or missing.
struct ImageTokens {
    // M-RoPE positions (3, B, T) int64 (Qwen's get_rope_index): text counts up in all three
    // streams; an image takes (0, row, column) on its merged grid plus the position after the text
    // before it, and the text after it resumes one past the largest of those. Padding holds 1.
    torch::Tensor positions;
    std::vector<int64_t> imagesPerSample;
};
ImageTokens findImageTokens(const torch::Tensor& tokens, const torch::Tensor& attentionMask,
                            const torch::Tensor& imageGrid, const ModelDims& dims,
                            const std::vector<int64_t>& sampleIndex);

} // namespace parallax

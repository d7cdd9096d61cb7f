#pragma once

#include <torch/torch.h>

#include <utility>
#include <vector>

namespace parallax {

// Qwen-Image's multi-scale rotary embedding (MSRoPE). Each head's D channels are D / 2 pairs; the
// pairs are shared out over three axes (`axes`: frame, row, column pair counts summing to D / 2),
// pair j of an axis of n pairs turning by position x 1 / theta^(j / n). An image of h x w packed
// tokens (frame 0) has its rows at -(h - h / 2) .. h / 2 - 1 and its columns likewise (centred);
// text token i sits at max(h / 2, w / 2) + i on all three axes. Angles are float32, as published.
struct QwenImageRotary {
    torch::Tensor imageCos, imageSin; // (image tokens, D / 2), image by image, tokens row by row
    torch::Tensor textCos, textSin;   // (T, D / 2)
};
QwenImageRotary qwenImageRotary(int64_t h, int64_t w, int64_t textTokens, const std::vector<int64_t>& axes,
                                double theta, const torch::Device& device);

// Several images in one sequence, as the Edit pipelines place the image being made and its
// reference images after it: image i of `grids` (rows, columns of packed tokens) sits at frame i,
// centred as above, and the text starts past the largest max(h / 2, w / 2) of them all.
struct PackedGrid {
    int64_t rows, columns;
    int64_t tokens() const { return rows * columns; }
};
QwenImageRotary qwenImageRotary(const std::vector<PackedGrid>& grids, int64_t textTokens,
                                const std::vector<int64_t>& axes, double theta, const torch::Device& device);

// x (B, S, H, D) with each consecutive channel pair (2j, 2j+1) rotated as the complex number
// x_2j + i x_2j+1 times cos_j + i sin_j; cos and sin (S, D / 2). Computed in float32, returned in
// x's dtype.
torch::Tensor applyPairRotary(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

} // namespace parallax

#pragma once

#include <torch/torch.h>

#include <utility>
#include <vector>

namespace parallax {

// Rotary position embedding as the Qwen models apply it (rotate-half; the frequencies of head
// dimension D are 1 / theta^(2i / D), i < D/2). `positions` is (B, T) for one stream of positions,
// or (3, B, T) for M-RoPE: the temporal, height and width streams, where `mropeSection` (three
// counts summing to D/2) says how many frequencies each stream drives, in that order. Returns cos
// and sin (B, T, D) in float32.
std::pair<torch::Tensor, torch::Tensor> rotaryCosSin(const torch::Tensor& positions, int64_t headDim, double theta,
                                                     const std::vector<int64_t>& mropeSection = {});

// [-x2, x1] for x = [x1, x2] split in halves along the last dimension.
torch::Tensor rotateHalf(const torch::Tensor& x);

// x cos + rotate_half(x) sin for x (B, H, T, D) and cos, sin (B, T, D), in x's dtype.
torch::Tensor applyRotary(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

} // namespace parallax

#pragma once

#include <torch/torch.h>

#include <vector>

namespace parallax {

// Softmax attention of q, k, v (S, H, D) within each segment [bounds[i], bounds[i + 1]) of the
// sequence and never across segments (the vision tower's windows and images): segments are padded
// to the longest and attended together, the padding masked. bounds: 0, ..., S, increasing.
// Returns (S, H * D).
torch::Tensor segmentAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                               const std::vector<int64_t>& bounds);

} // namespace parallax

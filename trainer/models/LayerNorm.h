#pragma once

#include <torch/torch.h>

namespace parallax {

// The models' LayerNorm: `ln`'s weight and bias over the last dimension of `x`. On a GPU under
// bf16 autocast, in a build with the worker's kernels (trainer/kernels), float32 input and
// parameters with at most kernels::kLayerNormMaxColumns columns, it runs fused and returns bf16 —
// the value autocast's LayerNorm followed by the next product's cast would give, without the
// float32 output in between; its backward takes the bf16 gradient as it comes. Elsewhere it is
// `ln->forward(x)`.
torch::Tensor layerNorm(torch::nn::LayerNormImpl& ln, const torch::Tensor& x);

// Whether layerNorm takes the fused path here.
bool fusedLayerNormApplies(const torch::nn::LayerNormImpl& ln, const torch::Tensor& x);

} // namespace parallax

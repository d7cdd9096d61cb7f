#pragma once

#include <torch/torch.h>

#include <utility>

namespace parallax {

// The models' LayerNorm: `ln`'s weight and bias over the last dimension of `x`. On a GPU under
// bf16 autocast, in a build with the worker's kernels (trainer/kernels), float32 input and
// parameters with at most kernels::kLayerNormMaxColumns columns, it runs fused and returns bf16 —
// the value autocast's LayerNorm followed by the next product's cast would give, without the
// float32 output in between; its backward takes the bf16 gradient as it comes. Elsewhere it is
// `ln->forward(x)`.
torch::Tensor layerNorm(torch::nn::LayerNormImpl& ln, const torch::Tensor& x);

// {x + branch, layerNorm(ln, x + branch)}: a residual add and the LayerNorm of its sum. Fused into
// one pass where layerNorm is fused and the branch is bf16 of x's shape (a product's output under
// autocast): the sum (float32) and the bf16 normalized rows written together, and backward adds the
// sum's own gradient to the LayerNorm's and hands the branch its bf16 copy, in one pass too.
std::pair<torch::Tensor, torch::Tensor> addLayerNorm(torch::nn::LayerNormImpl& ln, const torch::Tensor& x,
                                                     const torch::Tensor& branch);

// adaLN modulation of x (B, S, C) by one (scale, shift) per sample, each (B, 1, C):
// LayerNorm(x) without affine parameters (eps: qwen_image's 1e-6), times (1 + scale), plus shift. Fused
// where fusedModulateApplies (a GPU under bf16 autocast, float32 or bf16 x — x's gradient comes
// back in its type — a build with the kernels): one
// pass that returns bf16 — what the next product reads — with backward's per-sample sums of the
// scale and shift gradients in the same kernels as a LayerNorm's. Elsewhere the composed
// operations, float32 under autocast.
torch::Tensor modulate(const torch::Tensor& x, const torch::Tensor& scale, const torch::Tensor& shift,
                       double eps);
bool fusedModulateApplies(const torch::Tensor& x, const torch::Tensor& scale, const torch::Tensor& shift);

// Whether layerNorm takes the fused path here.
bool fusedLayerNormApplies(const torch::nn::LayerNormImpl& ln, const torch::Tensor& x);

} // namespace parallax

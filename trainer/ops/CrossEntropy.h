#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace parallax {

// Summed cross-entropy of (N, V) logits against (N) integer labels; rows whose label is
// `ignoreIndex` count zero. Returns a float32 scalar. On CUDA tensors of float32, bf16 or fp16 in a
// build with the worker's kernels (trainer/kernels) it runs fused in the logits' dtype, reading the
// logits once forward and once backward; everywhere else it is LibTorch's cross_entropy over the
// logits upcast to float32. Both give the same loss and gradient to the rounding of the dtype.
torch::Tensor crossEntropySum(const torch::Tensor& logits, const torch::Tensor& labels, int64_t ignoreIndex = -1);

// Whether crossEntropySum takes the fused path for these logits.
bool fusedCrossEntropyApplies(const torch::Tensor& logits);

// The composed version, whatever the device (the reference the fused one is tested against).
torch::Tensor composedCrossEntropySum(const torch::Tensor& logits, const torch::Tensor& labels, int64_t ignoreIndex = -1);

} // namespace parallax

#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace parallax::compat {

// One AdamW update of every tensor in `params` with LibTorch's fused multi-tensor kernel
// (at::_fused_adamw_, LibTorch 2.1 and later, CUDA): one kernel launch instead of about ten elementwise
// ones per tensor. The math is trainer/train/AdamW.cpp's: the gradient times `gradScale`
// (clipping), decoupled weight decay p *= 1 - lr * weightDecay, m = b1 m + (1 - b1) g,
// v = b2 v + (1 - b2) g^2, p -= lr / (1 - b1^step) * m / (sqrt(v) / sqrt(1 - b2^step) + eps).
// `step` is the update's 1-based count. When gradScale != 1 the gradients are left multiplied by
// it (the kernel writes the scaled gradient back).
//
// Returns false and changes nothing when the fused kernel cannot run here: an older LibTorch, a
// build without CUDA, tensors not all float32 on one CUDA device, or lists of different lengths.
// Tensors without elements are skipped.
bool fusedAdamW(const std::vector<torch::Tensor>& params, const std::vector<torch::Tensor>& grads,
                const std::vector<torch::Tensor>& expAvgs, const std::vector<torch::Tensor>& expAvgSqs, int64_t step,
                double lr, double beta1, double beta2, double weightDecay, double eps, double gradScale);

// Whether fusedAdamW() can run at all in this build (LibTorch version and CUDA).
bool fusedAdamWAvailable();

} // namespace parallax::compat

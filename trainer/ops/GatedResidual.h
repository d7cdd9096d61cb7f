#pragma once

#include <torch/torch.h>

namespace parallax {

// The gated residual of an adaLN block: x + gate * branch, x (B, S, C), branch of x's shape, gate
// (B, 1, C), one row per sample. Fused where fusedGatedResidualApplies (a GPU, float32 or bf16 x,
// bf16 branch and gate — a product's output and a slice of the modulation's under autocast — and a
// build with the worker's kernels, trainer/kernels): one pass forward and one backward, with the
// values of the composed form (GatedResidual.h in trainer/kernels says how). Elsewhere the
// composed operations.
torch::Tensor gatedResidual(const torch::Tensor& x, const torch::Tensor& gate, const torch::Tensor& branch);
bool fusedGatedResidualApplies(const torch::Tensor& x, const torch::Tensor& gate, const torch::Tensor& branch);

} // namespace parallax

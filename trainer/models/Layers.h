#pragma once

// Functions the units of the three models share.

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>

namespace parallax {

// Standard deviation of every Linear and Embedding weight at initialization (docs/models.md).
constexpr double kInitStd = 0.02;

// `x` (empty: a unit's output for no input, such as a vision unit's for a batch without images)
// with `module`'s trainable parameters reached by autograd at zero: x + 0 * (their sum), the same
// values. A backward then runs the unit on every rank, with zero gradients where it had no input,
// as collectives over its parameters (ZeRO-3's gathers and reductions) need every data-parallel rank
// to join in the same order.
torch::Tensor reachingParameters(const torch::Tensor& x, torch::nn::Module& module);

// Multi-head attention of (B, S, C') projections; the head count is C' / headDim so that a
// tensor-parallel rank holding a subset of the heads runs the same code. Returns (B, S, C').
torch::Tensor multiHeadAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                 int64_t headDim, bool causal);


// (B, channels, S, S) -> (B, (S/patch)^2, channels*patch*patch), patches in row-major order, each
// patch flattened channel first.
torch::Tensor patchify(const torch::Tensor& images, int64_t patch);
// The inverse of patchify: (B, P, channels*patch*patch) -> (B, channels, S, S).
torch::Tensor unpatchify(const torch::Tensor& patches, int64_t patch, int64_t channels, int64_t imageSize);

// Sinusoidal features of 1000 t: (B) -> (B, 256), 128 cosines then 128 sines at frequencies
// exp(-ln(10000) i / 128). Computed in float32.
torch::Tensor timestepFeatures(const torch::Tensor& t);
constexpr int64_t kTimestepFeatures = 256;

// A module that only groups others under a published name ("self_attn", "mlp"), registered in `parent`.
std::shared_ptr<torch::nn::Module> moduleGroup(torch::nn::Module& parent, const std::string& name);

} // namespace parallax

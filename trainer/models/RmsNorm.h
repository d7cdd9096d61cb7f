#pragma once

#include <torch/torch.h>

#include <functional>

namespace parallax {

// RMSNorm as the Qwen models compute it: in float32 whatever the input's dtype, x / sqrt(mean(x^2)
// + eps), cast back to the input's dtype, times the weight (initialized to ones).
class RmsNorm : public torch::nn::Module {
public:
    RmsNorm(int64_t dim, double eps) : eps(eps) { weight = register_parameter("weight", torch::ones({dim})); }

    torch::Tensor forward(const torch::Tensor& x) {
        const torch::Tensor h = x.to(torch::kFloat32);
        const torch::Tensor normed = h * torch::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps);
        return (weight_transform ? weight_transform(weight) : weight) * normed.to(x.scalar_type());
    }

    double eps;
    torch::Tensor weight; // (dim)
    // Declared by the model: it normalizes each attention head of q or k (Qwen-Image), so under
    // tensor parallelism a rank applies it to its own heads only and its weight's gradient is that
    // rank's part of the sum over all heads.
    bool per_head = false;
    // Applied to the weight where it is read, set from outside: tensor parallelism's f (identity
    // forward, all-reduce of the gradient backward) for a per-head norm, so that every rank's weight
    // gets the whole gradient. Unset: the weight as it is.
    std::function<torch::Tensor(const torch::Tensor&)> weight_transform;
};

} // namespace parallax

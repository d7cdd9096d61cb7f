#pragma once

#include <torch/torch.h>

namespace parallax {

// RMSNorm as the Qwen models compute it: in float32 whatever the input's dtype, x / sqrt(mean(x^2)
// + eps), cast back to the input's dtype, times the weight (initialized to ones).
class RmsNorm : public torch::nn::Module {
public:
    RmsNorm(int64_t dim, double eps) : eps(eps) { weight = register_parameter("weight", torch::ones({dim})); }

    torch::Tensor forward(const torch::Tensor& x) {
        const torch::Tensor h = x.to(torch::kFloat32);
        const torch::Tensor normed = h * torch::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps);
        return weight * normed.to(x.scalar_type());
    }

    double eps;
    torch::Tensor weight; // (dim)
};

} // namespace parallax

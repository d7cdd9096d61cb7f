#pragma once

#include <torch/torch.h>

namespace parallax {

// Where a product that accumulates its weight gradient in place (accumulatingLinear) hands that
// gradient over instead of computing it in its backward, for a pipeline schedule that runs weight
// gradients in passes of their own (zb1: trainer/parallel/WeightGradQueue). A Linear layer holds
// one where its wrapper set it (Linear::weight_grad_deferral).
class WeightGradDeferral {
public:
    virtual ~WeightGradDeferral() = default;
    // grad += outputGrad^T input, now or later: grad (out, in) the weight's fp32 .grad(),
    // outputGrad (N, out) and input (N, in) in the product's dtype, none of them recording autograd.
    virtual void defer(const torch::Tensor& grad, const torch::Tensor& outputGrad, const torch::Tensor& input) = 0;
};

} // namespace parallax

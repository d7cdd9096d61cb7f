#pragma once

#include "trainer/ops/WeightGradDeferral.h"

#include <torch/torch.h>

#include <memory>
#include <vector>

namespace parallax {

// x W^T + b for one weight, or for several stacked along the output (linearStack), whose weight and
// bias gradients backward adds straight into the parameters' .grad() tensors (the trainer's fp32
// buckets) instead of handing autograd a gradient to cast and add; the parameters' accumulators still
// run after it (with nothing to add), so the reducers' hooks fire as before. Under bf16 autocast the products run in bf16 on
// copies saved for backward; the weight gradient accumulates in fp32.
//
// Applies while autograd records and every weight and bias requires grad and already has a .grad()
// tensor (the trainer gives every parameter one); elsewhere the plain product runs.
bool accumulatingLinearApplies(const std::vector<torch::Tensor>& weights, const std::vector<torch::Tensor>& biases);

// (.., in) -> one (.., out_i) per weight: column slices of one product over the stacked weights;
// biases empty or one per weight. Backward takes each slice's gradient by itself (none for an
// unused slice), with no gradient of the whole product built from them.
// `products`: the tensors the products multiply by, one per weight (a weight's copy kept elsewhere, as
// ZeRO-3's bf16 gather or ProductCopies, or the weight itself); empty: the weights. `biasProducts`
// likewise, one per bias, or empty. Gradients go to the weights and biases.
// `deferral`: backward hands each weight's gradient product to it instead of adding it (the bias
// gradients and the input gradient it computes itself); null: it adds them.
std::vector<torch::Tensor> accumulatingLinear(const torch::Tensor& x, const std::vector<torch::Tensor>& weights,
                                              const std::vector<torch::Tensor>& biases,
                                              const std::vector<torch::Tensor>& products = {},
                                              const std::vector<torch::Tensor>& biasProducts = {},
                                              const std::shared_ptr<WeightGradDeferral>& deferral = nullptr);

// gelu(x W^T + b, "tanh") for one weight and an optional bias, accumulating like accumulatingLinear.
// Backward computes GELU's input gradient and the bias gradient together (on a GPU for bf16, one
// pass: trainer/kernels/ColumnSum) instead of writing the one and reading it again for the other.
// `product`, `biasProduct`: what the product multiplies by and adds (undefined: the weight, the bias).
// `deferral`: as accumulatingLinear's.
torch::Tensor accumulatingLinearGelu(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                                     const torch::Tensor& product = {}, const torch::Tensor& biasProduct = {},
                                     const std::shared_ptr<WeightGradDeferral>& deferral = nullptr);

// out += x.sum(0), accumulated in out's type: a bias gradient from the (rows, out) output gradient.
// On a GPU, for a bf16 x whose rows are contiguous (a column slice of wider rows too) and a float32
// out, one fused pass (trainer/kernels/ColumnSum); elsewhere LibTorch's sum and add.
void addColumnSums(const torch::Tensor& out, const torch::Tensor& x);

} // namespace parallax

#pragma once

#include <torch/torch.h>

#include <functional>

namespace parallax {

// y = x W^T + b with parameters "weight" (out, in) and "bias" (out), as torch::nn::Linear, but
// open to tensor parallelism: it finds these layers by name, shards `weight`/`bias` in place
// (Tensor::set_data keeps the registered names) and installs the communication of a sharded
// layer in the two transforms, so the model code stays single-device.
class Linear : public torch::nn::Module {
public:
    using Transform = std::function<torch::Tensor(const torch::Tensor&)>;

    // initStd: standard deviation of the weight's initialization; 0 initializes it to zero.
    Linear(int64_t in, int64_t out, bool withBias, double initStd)
        : in_features(in), out_features(out), init_std(initStd) {
        weight = register_parameter("weight", torch::empty({out, in}));
        if (withBias) bias = register_parameter("bias", torch::empty({out}));
    }

    torch::Tensor forward(const torch::Tensor& x) {
        const torch::Tensor input = input_transform ? input_transform(x) : x;
        if (!output_transform) return torch::linear(input, weight, bias);
        // A row-parallel layer sums partial products across ranks before adding the bias once.
        torch::Tensor y = output_transform(torch::linear(input, weight));
        return bias.defined() ? y + bias : y;
    }

    int64_t in_features;
    int64_t out_features;
    double init_std;
    torch::Tensor weight; // (out, in)
    torch::Tensor bias;   // (out), undefined without bias
    // Applied to the input before the product (column parallel: identity forward, all-reduce of
    // the input gradient backward).
    Transform input_transform;
    // Applied to x W^T before the bias (row parallel: all-reduce forward).
    Transform output_transform;
};

} // namespace parallax

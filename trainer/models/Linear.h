#pragma once

#include "core/spec/ModelTensors.h"
#include "trainer/models/LoraAdapter.h"
#include "trainer/ops/AccumulatingLinear.h"

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace parallax {

// y = x W^T + b with parameters "weight" (out, in) and "bias" (out), as torch::nn::Linear, but
// open to tensor parallelism: it shards `weight`/`bias` in place as the layer's declared `split`
// says (Tensor::set_data keeps the registered names) and installs the communication of a sharded
// layer in the two transforms, so the model code stays single-device and no name is matched.
class Linear : public torch::nn::Module {
public:
    using Transform = std::function<torch::Tensor(const torch::Tensor&)>;

    // initStd: standard deviation of the weight's initialization; 0 initializes it to zero.
    Linear(int64_t in, int64_t out, bool withBias, double initStd)
        : in_features(in), out_features(out), init_std(initStd) {
        weight = register_parameter("weight", torch::empty({out, in}));
        if (withBias) bias = register_parameter("bias", torch::empty({out}));
    }

    torch::Tensor forward(const torch::Tensor& x) { return withAdapter(x, baseForward(x)); }

    // gelu(forward(x), "tanh"): where the product accumulates and no tensor-parallel output transform
    // sits between it and the GELU, one autograd step for both (accumulatingLinearGelu).
    torch::Tensor forwardGelu(const torch::Tensor& x) {
        if (output_transform || adapter) return torch::gelu(forward(x), "tanh");
        const torch::Tensor input = input_transform ? input_transform(x) : x;
        if (accumulates(bias))
            return accumulatingLinearGelu(input, weight, bias, product_weight, product_bias, weight_grad_deferral);
        return torch::gelu(product(input, bias), "tanh");
    }

    // The layer without its LoRA path.
    torch::Tensor baseForward(const torch::Tensor& x) const {
        const torch::Tensor input = input_transform ? input_transform(x) : x;
        if (!output_transform) return product(input, bias);
        // A row-parallel layer sums partial products across ranks before adding the bias once.
        torch::Tensor y = output_transform(product(input, torch::Tensor()));
        return bias.defined() ? y + bias : y;
    }

    // `y` (this layer's output for `x` without LoRA) plus the LoRA path where one is set.
    torch::Tensor withAdapter(const torch::Tensor& x, const torch::Tensor& y) const {
        return adapter ? y + adapter->delta(x, input_transform, output_transform) : y;
    }

    // input W^T (+ b), accumulating the parameters' gradients in place where that applies.
    torch::Tensor product(const torch::Tensor& input, const torch::Tensor& b) const {
        if (accumulates(b))
            return accumulatingLinear(input, {weight}, biasList(b), productList(), biasProductList(b),
                                      weight_grad_deferral)
                .front();
        return torch::linear(input, productWeight(), b.defined() && product_bias.defined() ? product_bias : b);
    }

    // What the products multiply by: the weight's copy where one is set, else the weight.
    const torch::Tensor& productWeight() const { return product_weight.defined() ? product_weight : weight; }
    std::vector<torch::Tensor> productList() const {
        return product_weight.defined() ? std::vector<torch::Tensor>{product_weight} : std::vector<torch::Tensor>{};
    }

    // The bias's copy for the products, where one is set and `b` is the bias.
    std::vector<torch::Tensor> biasProductList(const torch::Tensor& b) const {
        return product_bias.defined() && b.defined() ? std::vector<torch::Tensor>{product_bias}
                                                     : std::vector<torch::Tensor>{};
    }

    static std::vector<torch::Tensor> biasList(const torch::Tensor& b) {
        return b.defined() ? std::vector<torch::Tensor>{b} : std::vector<torch::Tensor>{};
    }
    bool accumulates(const torch::Tensor& b) const { return accumulatingLinearApplies({weight}, biasList(b)); }

    int64_t in_features;
    int64_t out_features;
    double init_std;
    // Declared by the model: how tensor parallelism splits this layer (core/spec/ModelTensors.h:
    // Column splits the outputs, Row the inputs, Replicated keeps it whole on every rank).
    TensorSplit split = TensorSplit::Replicated;
    // Declared by the model: the name LoRA targets ([finetune] lora_targets) match this layer by, as PEFT
    // and diffusers name the module ("q_proj", "to_out.0"; the look-alike kinds: "q", "fc1"). Empty:
    // LoRA never adapts it (the output head, embeddings' projections).
    std::string lora_name;
    // The LoRA path set from outside (trainer/finetune); null: none.
    std::shared_ptr<LoraAdapter> adapter;
    torch::Tensor weight; // (out, in)
    torch::Tensor bias;   // (out), undefined without bias
    // A copy of the weight for the products, set by whoever keeps the weight's values elsewhere:
    // ZeRO-3 gathers the weights it shards straight in bf16 for forward (Zero3::useProductCopies), so
    // their fp32 whole never exists on a rank. While it is set, products read it instead of the weight
    // (and instead of autocast's cast of it); gradients still go to the weight. Undefined: none.
    torch::Tensor product_weight;
    // The same for the bias: a copy of it in the products' dtype (ProductCopies), read by the
    // products that accumulate instead of autocast's cast of the bias. Undefined: none.
    torch::Tensor product_bias;
    // Where the product's backward hands the weight gradient over, set by a pipeline schedule that
    // runs weight gradients in passes of their own (zb1: trainer/parallel/WeightGradQueue). Null:
    // backward adds it. Only the products that accumulate in place (accumulates()) hand it over; the
    // plain torch::linear path keeps the whole gradient in backward.
    std::shared_ptr<WeightGradDeferral> weight_grad_deferral;
    // Applied to the input before the product (column parallel: identity forward, all-reduce of
    // the input gradient backward).
    Transform input_transform;
    // Applied to x W^T before the bias (row parallel: all-reduce forward).
    Transform output_transform;
};

// linearStack's one product over the stacked weights of `layers`, without their LoRA paths.
inline std::vector<torch::Tensor> linearStackBase(const torch::Tensor& x, const std::vector<Linear*>& layers) {
    std::vector<torch::Tensor> out;
    std::vector<torch::Tensor> weights, biases, products, biasProducts;
    std::vector<int64_t> widths;
    bool copies = false, biasCopies = true;
    for (const Linear* l : layers) {
        weights.push_back(l->weight);
        products.push_back(l->productWeight());
        copies = copies || l->product_weight.defined();
        if (l->bias.defined()) biases.push_back(l->bias);
        if (l->bias.defined()) biasProducts.push_back(l->product_bias);
        biasCopies = biasCopies && (!l->bias.defined() || l->product_bias.defined());
        widths.push_back(l->weight.size(0));
    }
    if (accumulatingLinearApplies(weights, biases))
        return accumulatingLinear(x, weights, biases, copies ? products : std::vector<torch::Tensor>{},
                                  biasCopies ? biasProducts : std::vector<torch::Tensor>{},
                                  layers.front()->weight_grad_deferral);
    const torch::Tensor y = torch::linear(x, torch::cat(products),
                                          biases.empty() ? torch::Tensor() : torch::cat(biasCopies ? biasProducts : biases));
    int64_t start = 0;
    for (int64_t w : widths) {
        out.push_back(y.narrow(-1, start, w));
        start += w;
    }
    return out;
}

// The outputs of several layers that read the same input, e.g. attention's q, k and v. Where none of
// them carries a tensor-parallel transform and all or none have a bias, one product over their
// stacked weights: one wider matrix product and one input gradient instead of several (and, under
// mixed precision, one cast of the input), which hands its weight gradients to their deferral
// where all share one; each layer's LoRA path is added to its part. Otherwise each layer's own forward.
inline std::vector<torch::Tensor> linearStack(const torch::Tensor& x, const std::vector<Linear*>& layers) {
    bool stack = layers.size() > 1;
    for (const Linear* l : layers)
        stack = stack && !l->input_transform && !l->output_transform &&
                l->bias.defined() == layers.front()->bias.defined() &&
                l->weight_grad_deferral == layers.front()->weight_grad_deferral;
    std::vector<torch::Tensor> out;
    if (!stack) {
        for (Linear* l : layers) out.push_back(l->forward(x));
        return out;
    }
    out = linearStackBase(x, layers);
    for (size_t i = 0; i < layers.size(); ++i) out[i] = layers[i]->withAdapter(x, out[i]);
    return out;
}

} // namespace parallax

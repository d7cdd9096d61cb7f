#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>

namespace parallax {

// One factor of a LoRA adapter: a module holding only "weight", so that a Linear that registers the
// two factors as "lora_A" and "lora_B" names their parameters as PEFT does ("units.3.q.lora_A.weight").
// Not a Linear: nothing that walks a model's Linear layers (initialization, tensor parallelism, ZeRO-3's
// product copies) takes it for one.
class LoraFactor : public torch::nn::Module {
public:
    LoraFactor(int64_t rows, int64_t columns) { weight = register_parameter("weight", torch::zeros({rows, columns})); }
    torch::Tensor weight;
};

// LoRA's low-rank path beside a frozen Linear, as PEFT computes it: scale * B (A (dropout(x))), A (r, in),
// B (out, r). Set on a layer from outside (trainer/finetune/Finetune.h); the layer adds delta() to its output.
//
// Under tensor parallelism the factors are split with the layer (trainer/parallel/TensorParallel.cpp): a
// column-split layer keeps A whole and its rows of B, a row-split one its columns of A and B whole. The
// path then runs through the layer's own transforms at the rank-r bottleneck: the input transform after
// A (column: its backward sums A's output gradient over the group, so A's gradient and the input's are
// whole on every rank), the output transform before B (row: its forward sums the partial A products).
// That is one collective of r values per token beside the layer's own.
class LoraAdapter {
public:
    using Transform = std::function<torch::Tensor(const torch::Tensor&)>;

    LoraAdapter(std::shared_ptr<LoraFactor> a, std::shared_ptr<LoraFactor> b, double scale, double dropout)
        : A(std::move(a)), B(std::move(b)), scale(scale), dropout(dropout) {}

    // The path's contribution to the layer's output; `x` is the layer's input before its transforms.
    torch::Tensor delta(const torch::Tensor& x, const Transform& inputTransform, const Transform& outputTransform) const {
        // Whether or not autograd records: activation checkpointing runs the forward without it and
        // again with it, drawing the same mask from the generator state it restores.
        torch::Tensor in = dropout > 0 ? torch::dropout(x, dropout, /*train=*/true) : x;
        torch::Tensor h = torch::linear(in, A->weight); // (..., r), partial over the group when row-split
        if (inputTransform) h = inputTransform(h);
        if (outputTransform) h = outputTransform(h);
        return torch::linear(h, B->weight) * scale; // (..., out)
    }

    std::shared_ptr<LoraFactor> A; // (r, in)
    std::shared_ptr<LoraFactor> B; // (out, r)
    double scale;
    double dropout;
};

} // namespace parallax

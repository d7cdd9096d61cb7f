#pragma once

#include <torch/torch.h>

#include <functional>

namespace parallax {

// A lookup table with parameter "weight" (count, dim), as torch::nn::Embedding, but open to tensor
// parallelism like Linear: a vocabulary-parallel rank holds a slice of the rows and installs its
// lookup (mask, local lookup, sum over the group) without the model code knowing.
class Embedding : public torch::nn::Module {
public:
    using Lookup = std::function<torch::Tensor(const torch::Tensor& tokens, const torch::Tensor& weight)>;

    Embedding(int64_t count, int64_t dim) : count(count), dim(dim) {
        weight = register_parameter("weight", torch::empty({count, dim}));
    }

    torch::Tensor forward(const torch::Tensor& tokens) {
        return lookup ? lookup(tokens, weight) : torch::embedding(weight, tokens); // (..., dim)
    }

    int64_t count;
    int64_t dim;
    // Declared by the model: whether tensor parallelism splits the rows (a vocabulary) over ranks.
    bool vocab_parallel = true;
    torch::Tensor weight; // (count, dim)
    Lookup lookup;
};

} // namespace parallax

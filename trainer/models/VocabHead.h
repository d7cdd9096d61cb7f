#pragma once

#include "trainer/models/Linear.h"
#include "trainer/models/Model.h"

#include <functional>

namespace parallax {

// A last unit that projects onto a vocabulary and takes a cross-entropy: tensor parallelism splits
// its projection by vocabulary rows and installs the vocabulary-parallel loss.
class VocabHead : public Unit {
public:
    // The Linear (C -> V) whose rows are the vocabulary.
    virtual Linear& vocabProjection() = 0;

    // Summed cross-entropy of (N, V') logits against (N) labels (negative labels ignored). Unset:
    // over the whole vocabulary; tensor parallelism installs its vocabulary-parallel version when
    // the projection holds a slice of the vocabulary.
    std::function<torch::Tensor(const torch::Tensor& logits, const torch::Tensor& labels)> loss;
};

} // namespace parallax

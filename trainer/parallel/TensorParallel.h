#pragma once

#include "trainer/comm/Communicator.h"
#include "trainer/models/Model.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace parallax {

// Where a tensor-parallel parameter sits in the full (single-device) parameter.
struct TensorShard {
    std::vector<int64_t> fullShape;
    int dim = 0;          // split dimension
    int64_t start = 0;    // first index along dim held here
    int64_t length = 0;
};
// Parameter name -> shard; parameters not listed are replicated over the tensor-parallel group.
using TensorParallelPlan = std::map<std::string, TensorShard>;

// Megatron-style tensor parallelism applied to a built model from outside (the model code stays
// single-device), to every unit the model holds:
//  - attention: q, k, v column-parallel (each rank keeps heads / tp whole heads), proj row-parallel;
//  - MLP: fc1 column-parallel, fc2 row-parallel;
//  - a norm of each head (RmsNorm::per_head) replicated, its weight read through f so that its
//    gradient is summed over the heads of every rank;
//  - LoRA adapters split with their layer: a column-parallel layer's B by rows, a row-parallel
//    layer's A by columns (trainer/models/LoraAdapter.h);
//  - token embeddings vocabulary-parallel (rows split, lookups masked and summed over the group);
//  - the language-model head column-parallel over the vocabulary with a vocabulary-parallel
//    cross-entropy, so full logits never exist on one rank.
// Column-parallel layers take their input through f (identity forward, all-reduce of the gradient
// backward), row-parallel outputs go through g (all-reduce forward, identity backward). Other
// parameters (norms, adaLN modulation, patch embeddings, positions) stay replicated. Weights are
// sliced from the full initialized model, so every layout starts from the same numbers.
// `tp` must outlive the model. Names are those of model->named_parameters().
TensorParallelPlan applyTensorParallel(Model& model, std::shared_ptr<Communicator> tp);

// f and g, exposed for tests.
torch::Tensor copyToTensorParallel(const torch::Tensor& x, Communicator& tp);
torch::Tensor reduceFromTensorParallel(const torch::Tensor& x, Communicator& tp);
// Summed cross-entropy of logits split over the vocabulary: `logits` (N, V/tp) hold vocabulary
// entries [vocabStart, vocabStart + V/tp); labels (N), -1 ignored.
torch::Tensor vocabParallelCrossEntropy(const torch::Tensor& logits, const torch::Tensor& labels, int64_t vocabStart,
                                        Communicator& tp);

} // namespace parallax

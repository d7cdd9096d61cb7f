#pragma once

#include "core/spec/ModelDims.h"
#include "trainer/compat/TorchCompat.h"
#include "trainer/data/SyntheticDataset.h"
#include "trainer/models/Model.h"

#include <numeric>
#include <string>
#include <vector>

namespace parallax::test {

inline ModelDims dimsOf(ModelKind kind, const std::string& preset) {
    ModelSpec spec;
    spec.kind = kind;
    spec.preset = preset;
    return resolveModel(spec);
}

inline ModelDims dimsOf(const std::string& kind, const std::string& preset) {
    return dimsOf(Choice<ModelKind>::named(kind).value(), preset);
}

// A synthetic batch of samples first, first+1, ... at step 0.
inline Batch batchOf(const ModelDims& dims, int64_t size, int64_t first = 0, uint64_t seed = 7) {
    std::vector<int64_t> indices(static_cast<size_t>(size));
    std::iota(indices.begin(), indices.end(), first);
    return SyntheticDataset(dims, seed).makeBatch(indices, 0);
}

// A qwen2_5_vl batch of `size` samples, each one image of 4 x 4 patches (2 x 2 merged tokens) between
// text tokens, its last four positions labelled: enough for the tower, the merger and the language
// model to take part. M-RoPE's three position streams are 0..T-1 alike; the draws come from `seed`.
inline Batch vlImageBatch(const ModelDims& dims, int64_t size, uint64_t seed = 7) {
    torch::Generator gen = compat::makeGenerator(seed);
    const int64_t pad = dims.tokens.image_pad;
    const std::vector<int64_t> row = {9, 17, dims.tokens.vision_start, pad, pad, pad, pad, dims.tokens.vision_end,
                                      40, 41, 42, dims.tokens.eos};
    const int64_t t = static_cast<int64_t>(row.size());
    Batch b;
    b.tokens = torch::tensor(row, torch::kInt64).repeat({size, 1});
    b.labels = torch::full({size, t}, -1, torch::kInt64);
    b.labels.narrow(1, t - 4, 4).copy_(b.tokens.narrow(1, t - 4, 4));
    b.positions = torch::arange(t, torch::kInt64).view({1, 1, t}).expand({3, size, t}).contiguous();
    b.attention_mask = torch::ones({size, t}, torch::kBool);
    const int64_t values = 3 * dims.vision_temporal * dims.patch * dims.patch;
    b.pixel_values = torch::randn({16 * size, values}, gen, torch::kFloat32);
    b.image_grid = torch::tensor(std::vector<int64_t>{1, 4, 4}, torch::kInt64).repeat({size, 1});
    for (int64_t i = 0; i < size; ++i) b.sample_index.push_back(i);
    return b;
}

inline double meanLoss(const Activation& out) {
    return (out.at(0) / out.at(1)).item<double>();
}

} // namespace parallax::test

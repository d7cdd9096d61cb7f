#pragma once

#include "core/spec/ModelDims.h"
#include "trainer/data/SyntheticDataset.h"
#include "trainer/models/Model.h"

#include <numeric>
#include <string>

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

inline double meanLoss(const Activation& out) {
    return (out.at(0) / out.at(1)).item<double>();
}

} // namespace parallax::test

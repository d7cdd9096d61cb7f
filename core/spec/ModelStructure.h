#pragma once

#include "core/spec/ModelKinds.h"

#include <string>
#include <vector>

namespace parallax {

// A published model's tensors and units, built in model order: each tensor belongs to the unit
// begun last, whose parameter counts are the sums of its tensors'. Counts that would not fit in 64
// bits throw std::invalid_argument.
struct ModelStructure {
    std::vector<UnitEstimate> units;
    std::vector<ModelTensor> tensors;
    // The part ([finetune]'s freeze switches) a tensor belongs to, by its name.
    ModelPart (*partOf)(const std::string& name) = nullptr;

    void unit(const UnitEstimate& u) { units.push_back(u); }
    void tensor(const std::string& name, std::vector<int64_t> shape, TensorSplit split, bool adaptable = false);
    // A tied copy (ModelTensor::tiedTo) of tensor `source`: held in the unit, not stored.
    void tiedCopy(const std::string& name, const std::string& source, std::vector<int64_t> shape, TensorSplit split);
    // A Linear(in, out): its weight (out, in), and its bias (out), which a row split leaves whole.
    void linear(const std::string& module, int64_t in, int64_t out, bool bias, TensorSplit split);
};

} // namespace parallax

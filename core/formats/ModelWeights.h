#pragma once

#include "core/spec/ModelDims.h"
#include "core/spec/ModelTensors.h"

#include <cstddef>
#include <string>
#include <vector>

namespace parallax {

// A model folder's weights compared with the parameters its kind declares (ModelTensors.h), from
// the safetensors headers alone: nothing of the tensors' data is read.
struct ModelWeightsCheck {
    WeightLayout layout = WeightLayout::Flat; // the published layout the folder names its tensors in
    std::vector<std::string> files;            // the .safetensors files read
    size_t expected = 0;                       // tensors the model declares
    size_t found = 0;                          // of those, present with the expected shape
    // Each problem as a sentence naming the file and the tensor: a tensor missing, of another
    // shape or of a type that is not a float; a shard the index names that is missing or broken.
    // At most kMostWeightProblems, then one line counting the rest.
    std::vector<std::string> problems;
    bool ok() const { return problems.empty(); }
};

constexpr size_t kMostWeightProblems = 20;

// Checks FOLDER (model.safetensors.index.json and the shards it names, or one model.safetensors;
// the kind's weights_file in general, in the folder modelPartFolder gives)
// against every tensor of `dims`'s published kind, in whichever of the kind's layouts the folder
// uses (the one holding most of the expected names). Tensors the model does not declare are left
// alone. Throws std::invalid_argument when the kind declares no tensors (a look-alike kind).
ModelWeightsCheck checkModelWeights(const std::string& folder, const ModelDims& dims);

} // namespace parallax

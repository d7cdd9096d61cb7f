#pragma once

#include "trainer/models/Model.h"

#include <string>

namespace parallax {

// Copies every parameter of `model` (a published kind: qwen2, qwen2_5_vl) from FOLDER's
// safetensors weights (model.safetensors.index.json and its shards, or one model.safetensors),
// named in whichever of the kind's published layouts the folder uses; F32, BF16 and F16 are
// converted to the parameter's dtype. Tensors are read from the mapped files, one at a time.
// Throws std::invalid_argument starting "model.from = FOLDER:" with every problem found (a tensor
// missing, of another shape or type, a shard missing or broken) before anything is copied.
void loadPublishedWeights(Model& model, const std::string& folder);

} // namespace parallax

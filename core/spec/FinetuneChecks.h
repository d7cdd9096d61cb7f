#pragma once

#include "core/spec/ModelDims.h"
#include "core/spec/SpecValidator.h"

#include <vector>

namespace parallax {

// The validator's checks of [finetune] (FinetuneSpec in RunSpec.h), in field order. For a published
// kind: the mode, the LoRA settings, targets the model has and parts that are not frozen, and that
// something trains; fields that do not apply (LoRA fields with mode "full", the tower's switches
// on a model without one) are warnings. For the other kinds every field set is a warning: they are
// ignored. `dims` is null when the model does not resolve or a dimension is unusable.
std::vector<SpecIssue> finetuneIssues(const RunSpec& spec, const ModelDims* dims);

} // namespace parallax

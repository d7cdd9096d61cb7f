#pragma once

#include "core/spec/ModelDims.h"
#include "core/spec/SpecValidator.h"

#include <vector>

namespace parallax {

// The validator's checks of a published kind's model (qwen2_5_vl, qwen2) beyond those every kind
// has: grouped-query heads, rotary sections, the worker's support. `dims` resolved from the spec,
// every dimension at least 1 and within its limit.
std::vector<SpecIssue> publishedModelIssues(const RunSpec& spec, const ModelDims& dims);
// The checks of the data fields conversations use (data.kind, path, max_pixels, min_pixels,
// on_truncate), and warnings for those set where they do not apply. `dims` is null when the model
// does not resolve or a dimension is unusable; `remote`: the data is read on other machines, so a
// path missing here is a warning.
std::vector<SpecIssue> conversationDataIssues(const RunSpec& spec, const ModelDims* dims, bool remote);

} // namespace parallax

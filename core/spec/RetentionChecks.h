#pragma once

#include "core/spec/SpecValidator.h"

#include <vector>

namespace parallax {

// The validator's checks of [retention] (RetentionSpec in RunSpec.h): segment size and raw
// telemetry time at least 1 and within their limits, output_keep_mb and disk_budget_gb 0 (none) or
// more, each an error naming the field; a budget smaller than the output it keeps, or a keep
// smaller than a segment, a warning saying what follows.
std::vector<SpecIssue> retentionIssues(const RunSpec& spec);

} // namespace parallax

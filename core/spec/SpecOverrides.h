#pragma once

#include "core/spec/RunSpec.h"
#include "core/spec/SpecValidator.h"

#include <string>
#include <vector>

namespace parallax {

// `base` with each "path=value" of `sets` applied in order ("parallel.dp=4", "launch.target=slurm",
// "launch.hosts=[\"a:8\", \"b:8\"]"): the value is read as TOML, or as a string when it is not
// TOML. Throws SpecError naming the entry for an unknown path or a value of the wrong type.
RunSpec applySpecOverrides(const RunSpec& base, const std::vector<std::string>& sets);

// What a spec that continues run `parentId` from its checkpoint changes: errors for what the
// checkpoint cannot be loaded into (another model), warnings for what makes the continued run
// differ from the one that would have gone on (the global batch, the data, the seed, the
// optimizer's settings, the precision). The layout, the hosts, the devices, the launcher, the
// micro-batch (the accumulation follows) and the number of steps may change freely.
std::vector<SpecIssue> resumeIssues(const RunSpec& parent, const RunSpec& next, int64_t parentId);

} // namespace parallax

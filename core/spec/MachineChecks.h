#pragma once

#include "core/spec/MachineInfo.h"
#include "core/spec/ModelDims.h"
#include "core/spec/RunSpec.h"
#include "core/spec/SpecValidator.h"

#include <vector>

namespace parallax {

// A local run's issues on this machine (validateSpec's part for launch.target = "local"): ranks and
// threads against its cores, and, for a spec with no error so far (`errorsSoFar` false), the memory
// estimate against its RAM or GPU memory. `dims`: the model's dimensions where they resolved and are
// usable, else null.
std::vector<SpecIssue> machineIssues(const RunSpec& spec, const MachineInfo& machine, const ModelDims* dims,
                                     bool errorsSoFar);

} // namespace parallax

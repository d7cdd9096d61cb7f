#pragma once

#include "core/spec/RunSpec.h"
#include "core/spec/SpecValidator.h"

#include <vector>

namespace parallax {

// The [launch] section's issues (validateSpec's part for it): the target and what goes with it
// (hosts, a cluster profile, Slurm's fields), process and thread counts, on_host_failure, the
// environment the ranks get (names, secrets, commands) and mpirun's arguments.
std::vector<SpecIssue> launchIssues(const RunSpec& spec);

} // namespace parallax

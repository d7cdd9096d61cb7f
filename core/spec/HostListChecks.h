#pragma once

// The validator's checks of a host list written into the spec (launch.hosts, launch.exclude_hosts),
// kept apart from the rest of the validator.

#include "core/spec/RunSpec.h"
#include "core/spec/SpecValidator.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace parallax {

// Entries of one list reported one by one; beyond them one issue says how many more there are, so
// that a list of a million bad entries is a few lines, not megabytes.
constexpr size_t kMostEntryIssues = 10;

// launch.hosts for launch.target = "hosts" without a profile: every entry "name:slots", each host
// listed once, every excluded host among them, and slots for every process (when `layoutUsable`:
// parallel.dp * tp * pp can be multiplied out). Time and memory grow as n log n in the entries.
std::vector<SpecIssue> hostListIssues(const RunSpec& spec, bool layoutUsable);

// The hosts launch.hosts names, each counted once, less launch.exclude_hosts: what
// launch.min_hosts is held against.
int64_t distinctHostCount(const LaunchSpec& launch);

} // namespace parallax

#pragma once

#include "core/store/RunStore.h"

#include <string>
#include <vector>

namespace parallax {

// Brings runs into `store` from their folders: the way back from a damaged or lost store, since a
// run folder keeps the run's spec (spec.toml), everything its ranks printed (output.log) and its
// checkpoints. `path` is one run folder or a folder of them (a store's <store>.runs). Each becomes
// a new run of `store` whose rows are imported from its output.log, whose end is the one the
// output shows (else lost), whose checkpoints are recorded, and which owns the folder from now on
// (resume works from it). A folder that is some run's of `store` already is left alone. Returns a
// line per folder; throws std::runtime_error when `path` holds no run folder.
std::vector<std::string> importRunFolders(RunStore& store, const std::string& path);

} // namespace parallax

#pragma once

#include "core/store/RunStore.h"

#include <string>
#include <vector>

namespace parallax {

// The complete checkpoints in a run's folder (<runDir>/checkpoints/step_N with its manifest.json),
// oldest first, as the events a rank reports when it writes one: step, path, bytes (the files the
// manifest lists), layout, and the manifest's time. A folder without a manifest (still written, or
// cut short) is not one; a manifest that does not parse is skipped.
std::vector<CheckpointEvent> checkpointsOnDisk(const std::string& runDir);

// Records in the store the complete checkpoints of `run`'s folder that it does not hold yet:
// ranks go on checkpointing for a while after their supervisor is killed, and `resume` takes the
// newest one on disk, so the store must know them too. Returns how many were added.
size_t recordCheckpointsOnDisk(RunStore& store, const RunRecord& run);

} // namespace parallax

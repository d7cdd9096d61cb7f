#pragma once

// What a scale run's device samples and rank steps stand for once the supervisor has thinned the
// older ones in the store (core/store/TelemetryThinning.h), so that the lines a launcher wrote can
// still be checked against the store exactly.

#include "core/store/RunStore.h"

#include <cstdint>

namespace parallax::scale {

// The steps a thinned rank_step row stands for: the thinner's window (thinRankSteps' default).
inline constexpr int64_t kThinnedStepWindow = 20;

struct StoredTelemetry {
    int64_t deviceRows = 0;    // rows of device_samples
    int64_t deviceSamples = 0; // the samples they stand for (the sum of their `samples`)
    int64_t rankStepRows = 0;  // rows of rank_steps
    int64_t rankSteps = 0;     // the (rank, step) pairs they stand for (rankStepsCovered)
};

// The steps the run's rank_step rows stand for, counted per row so that a row stored twice counts
// twice. A row at or past the store's thinning mark for rank_step (RunStore::thinnedUntil) is one
// step. Below the mark the steps fall in windows of kThinnedStepWindow from step 0, and a rank's
// rows of such a window are either the one row the thinner left at the window's first step, which
// stands for the window's kThinnedStepWindow steps (the thinner only takes windows whose every step
// is stored, never the newest step's), or, for a rank an alert named, its raw rows, one step each.
// Any row missing from a raw window, or a thinned row with a raw row beside it, makes the count
// differ from the lines written. What rows alone cannot tell apart: a named rank's window of which
// only the row of its first step survived reads as a thinned window.
int64_t rankStepsCovered(const RunStore& store, int64_t run);

StoredTelemetry storedTelemetry(const RunStore& store, int64_t run);

} // namespace parallax::scale

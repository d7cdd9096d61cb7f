#pragma once

#include <cstdint>
#include <vector>

namespace parallax {

class RunStore;

// A long run's device samples thinned in the store once they are older than the raw window
// ([retention] raw_telemetry_minutes): each rank's samples of a window of `windowSeconds` become
// one row (DeviceEvent::samples says how many it stands for) with their means of utilization,
// power, clock and CPU and their largest memory, temperature and resident size, at the newest
// sample's time, so that every page and report reads the same table, with a run's whole history at
// 1,024 ranks costing megabytes an hour rather than the 0.6 GB an hour of raw samples at 2 Hz.
// The samples of `keepRanks` (ranks an alert has named) stay raw.
//
// A pass thins at most `maxWindows` windows, each in one transaction, from where the last pass
// ended (the store records it per run), so that a supervisor holds the store only briefly between
// its writes. Returns the windows thinned.
struct ThinningOptions {
    double windowSeconds = 30;
    int maxWindows = 4;
};

struct ThinningPass {
    int windows = 0;
    int64_t rowsBefore = 0; // raw rows the windows held
    int64_t rowsAfter = 0;  // rows they hold now
};

ThinningPass thinDeviceSamples(RunStore& store, int64_t run, double before, const std::vector<int64_t>& keepRanks,
                               const ThinningOptions& options = {});

// The same for each rank's compute and wait times (rank_steps): a window of `windowSteps` steps
// whose every row was sent before `before` becomes one row per rank at the window's first step with
// the window's mean times; it stands for the steps up to the next row's, as the Live page's history
// reads rows. At 1,024 ranks and a step a second, 3.7 million rows an hour become 184,000.
ThinningPass thinRankSteps(RunStore& store, int64_t run, double before, const std::vector<int64_t>& keepRanks,
                           int64_t windowSteps = 20, int maxWindows = 4);

} // namespace parallax

#pragma once

#include "core/store/RunStore.h"
#include "core/telemetry/Statistics.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace parallax {

// What a finished (or running) run measured over its steady steps, from the store alone: median
// throughput, each rank's device while those steps ran, and the pipeline bubble of every step with
// spans next to the schedule's theory. `parallax-cli report` prints it; benchmarks quote it.
struct RunReport {
    struct Device {
        int rank = 0;
        std::string host;
        int device = -1;         // GPU index, -1 for a CPU rank
        int samples = 0;
        // Means and extremes over the samples that reported the value; nullopt when none did.
        std::optional<double> utilMean, utilMin, utilMax; // %
        std::optional<double> memMax, memTotal;           // bytes
        std::optional<double> powerMean;                  // W
        std::optional<double> tempMax;                    // degrees C
        std::optional<double> smClockMean;                // MHz
        std::optional<double> cpuMean;                    // % of one core
        std::optional<double> rssMax;                     // bytes
    };
    struct BubbleStep {
        int64_t step = 0;
        double overall = 0;            // fraction
        std::vector<double> stages;    // fraction per stage
    };

    int64_t run = 0;
    std::string name;
    int64_t fromStep = 0;     // the first step counted
    int64_t steps = 0;        // step rows counted
    int64_t lastStep = -1;
    double windowStart = 0;   // seconds, the counted steps' span (device samples inside it count)
    double windowEnd = 0;
    std::optional<double> tokensPerS, stepMs, mfu, peakMem; // medians (peak memory: the maximum)
    std::vector<Device> devices;    // by rank, then device
    std::vector<BubbleStep> bubbles; // steps with pipeline spans, from fromStep
    std::optional<double> bubbleMedian;
    std::vector<double> stageMedians;
    std::optional<double> bubbleTheory; // (p-1)/(m+p-1) of the run's spec when pp > 1
    std::string theoryBasis;            // e.g. "p = 2, m = 8, 1f1b"; or why there is no theory
};

// Steps before `fromStep` (warm-up) are left out of every figure. Throws StoreError for an unknown run.
RunReport buildRunReport(const RunStore& store, int64_t run, int64_t fromStep);
// The same from a record and step rows the caller has already read (device samples and spans still
// come from the store).
RunReport buildRunReport(const RunStore& store, const RunRecord& record, const std::vector<StepEvent>& metrics,
                         int64_t fromStep);

} // namespace parallax

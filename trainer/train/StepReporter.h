#pragma once

#include "core/telemetry/Events.h"
#include "trainer/comm/ProcessGroups.h"
#include "trainer/train/TelemetryEmitter.h"

#include <torch/torch.h>

#include <cstdint>
#include <deque>
#include <vector>

namespace parallax {

// What one rank read of a finished step.
struct FinishedStep {
    int64_t step = 0;
    double loss = 0;     // the global mean
    double lr = 0;
    double gradNorm = 0;
    double ms = 0;       // this rank's step time (StepClock)
    std::vector<double> lapMs;
    double hostMs = 0;   // the host's time queueing the step
    double waitMs = 0;   // of which blocked in collectives
    std::vector<SpanEvent> spans; // this rank's clock
    // Positions the step's samples filled over the data-parallel replicas (conversations); 0: every
    // sample counts Options::tokensPerSample.
    int64_t positions = 0;
    // The step's training FLOPs at its batches' real shapes over the replicas (latent models); 0:
    // Options::flopsPerToken prices every token.
    double flops = 0;
};

// Reports each finished step: the rank's own step time (for the straggler finder, with a flight
// recorder), its spans in rank 0's clock, and on rank 0 the step's loss, throughput, MFU and peak
// memory over every rank; at the end of the run, where the steady steps' time went.
class StepReporter {
public:
    struct Options {
        int64_t steps = 0;          // train.steps
        int64_t startStep = 0;      // the first step of this process (a resume's)
        int64_t stepEvery = 1;      // telemetry.step_every
        int64_t globalBatch = 0;
        int64_t tokensPerSample = 0;
        double flopsPerToken = 0;
        double peakFlops = 0;       // per device; 0: no MFU
        bool rankSteps = false;     // report each rank's step time
        double clockOffset = 0;     // this rank's clock - rank 0's, seconds
    };
    StepReporter(TelemetryEmitter& out, ProcessGroups& groups, torch::Device device, Options options);

    // Every rank calls it for every step, in order (it reduces over the world).
    void report(const FinishedStep& s);
    // Logs the medians of each part of the steady steps (after a warm-up of up to 10 steps).
    void logBreakdown() const;

private:
    double peakMemoryBytes() const; // since the last call: the allocator's peak on a GPU, peak RSS on CPU

    TelemetryEmitter& m_out;
    ProcessGroups& m_groups;
    torch::Device m_device;
    Options m_o;
    int64_t m_tokensSeen = 0;
    static constexpr size_t kSteadyStepsKept = 10000;
    struct SteadyStep {
        int64_t step = 0;
        double ms = 0;
        std::vector<double> lapMs;
    };
    std::deque<SteadyStep> m_steadySteps; // the last ones after the warm-up
};

} // namespace parallax

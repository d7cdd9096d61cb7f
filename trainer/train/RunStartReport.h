#pragma once

#include "core/spec/RunSpec.h"
#include "trainer/comm/ProcessGroups.h"
#include "trainer/train/TelemetryEmitter.h"

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace parallax {

// The figures of a run that the loop knows once it is set up.
struct RunFigures {
    int64_t params = 0;         // of this rank's model pieces
    double flopsPerToken = 0;   // 3 x forward FLOPs per token
    double peakFlops = 0;       // per device, the MFU basis
    torch::Device device{torch::kCPU};
    int64_t startStep = 0;      // the first step this process trains (after a resume)
    std::string dataset;        // Dataset::describe()
};

// Every rank's host, pid and clock offset, gathered over the world (every rank calls this), and
// rank 0's run_start event with the layout, the figures, the Slurm job it runs in and them; then
// each rank's line saying where it runs (host, device, threads, mesh coordinates, data).
// Returns this rank's clock minus rank 0's, in seconds.
double reportRunStart(const RunSpec& spec, ProcessGroups& groups, const RunFigures& figures, TelemetryEmitter& out);

} // namespace parallax

#pragma once

#include "core/telemetry/Events.h"
#include "tests/support/Process.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace parallax::testing {

// The outcome of one parallax-worker run under mpirun, read from its telemetry.
struct WorkerRun {
    int exitCode = -1;
    std::vector<StepEvent> steps;
    std::vector<SpanEvent> spans;
    std::vector<UnitTimeEvent> unit_times;             // telemetry.unit_times
    std::vector<CollectiveTimeEvent> collective_times; // telemetry.collective_times
    std::vector<SampleEvent> samples;                  // [samples]
    std::vector<std::string> logs;      // log events and plain lines
    std::string endStatus;              // run_end status
    std::string endReason;
    std::string runDir;
    std::string output;                 // everything printed, for failure messages

    std::vector<double> losses() const;
    std::string lastCheckpoint() const; // newest complete checkpoint folder, or ""
    std::map<int64_t, std::vector<SpanEvent>> spansByStep() const;
};

std::string workerPath(); // <build>/app/parallax-worker

// Writes `specToml` into `runDir` and runs `ranks` workers under mpirun (--oversubscribe, one thread
// per rank). `extraArgs` go to the worker.
WorkerRun runWorker(const std::string& specToml, int ranks, const std::string& runDir,
                    const std::vector<std::string>& extraArgs = {});

// The run made by `make` under `key`, made once in the test process and shared by its tests (the
// one-process baselines the layouts are compared with), and a folder those runs may share.
const WorkerRun& runOnce(const std::string& key, const std::function<WorkerRun(const std::string& dir)>& make);

// Largest relative difference |a - b| / max(|a|, |b|, tiny) over two loss series of equal length.
double maxRelativeDifference(const std::vector<double>& a, const std::vector<double>& b);

} // namespace parallax::testing

#pragma once

#include "core/spec/RunSpec.h"
#include "core/store/StoreTypes.h"
#include "core/telemetry/Events.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace parallax {

class StopSignalHandler;

// The longest --probe-timeout: a month of seconds (a probe is a short run).
constexpr double kMostProbeTimeoutSeconds = 30.0 * 24 * 3600;
// CliError with exit code 2 unless `seconds` can be a probe's time limit: more than 0 and at most
// kMostProbeTimeoutSeconds. Called before any probe starts.
void checkProbeTimeout(double seconds);

// Short runs that answer a question about a spec (fit: how much memory; advise: how fast): each a
// `parallax-cli run` of its own into a store beside the run store, where the hosts see the runs'
// folders too. Everything of the probes (store, folders, spec files) is removed when this ends.
// SIGINT, SIGTERM and SIGHUP stop the probe under way (its supervisor stops its run) and make
// run() throw CliError with exit code 3.
class ProbeRuns {
public:
    struct Result {
        int exit_code = -1;
        bool timed_out = false;
        std::optional<RunRecord> run;  // as the probe's store has it
        std::vector<StepEvent> steps;  // its step metrics
        std::vector<UnitTimeEvent> unit_times; // each unit's times, when it measured them (telemetry.unit_times)
        std::vector<CollectiveTimeEvent> collective_times; // likewise (telemetry.collective_times)
        std::string output_tail;       // the last line the probe printed, for a failure the store does not explain
        double seconds = 0;
        bool succeeded() const;
        // Why it did not succeed, in a few words ("" when it did).
        std::string failure(double timeoutSeconds) const;
    };

    // `what` names the command in messages ("fit").
    ProbeRuns(const std::string& storePath, std::string what, double timeoutSeconds);
    ~ProbeRuns();
    ProbeRuns(const ProbeRuns&) = delete;
    ProbeRuns& operator=(const ProbeRuns&) = delete;

    // Runs `spec` (its name names the probe) to its end. Throws CliError when the probe could not
    // start at all (a missing worker, hosts that are not ready: every probe would say the same) and
    // when a stop was requested.
    Result run(const RunSpec& spec);

private:
    std::string m_what;
    double m_timeoutSeconds;
    std::string m_store;
    std::string m_specs;
    int m_stopFds[2] = {-1, -1};
    std::unique_ptr<StopSignalHandler> m_stopHandler;
};

} // namespace parallax

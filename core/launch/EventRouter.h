#pragma once

#include "core/launch/AlertCenter.h"
#include "core/launch/HangDetector.h"
#include "core/telemetry/Events.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace parallax {

// What the supervisor does with each telemetry event of the ranks (the store has its rows from
// the OutputRouter already): steps, heartbeats and compute times to the HangDetector, the world
// and layout from run_start, rank steps to the AlertCenter's straggler check, the newest
// checkpoint for the run's outcome, and in srun mode the Slurm job the ranks run in.
class EventRouter {
public:
    using Clock = std::chrono::steady_clock;

    EventRouter(HangDetector& hangs, AlertCenter& alerts);

    // The ranks named the Slurm job they run in (run_start's slurm_job; srun mode only).
    void setSlurmJobHandler(std::function<void(const std::string& jobId)> handler) { m_onSlurmJob = std::move(handler); }
    void onEvent(const TelemetryEvent& event, Clock::time_point now);
    // The step of the newest checkpoint a rank reported.
    std::optional<int64_t> lastCheckpoint() const { return m_lastCheckpoint; }

private:
    HangDetector& m_hangs;
    AlertCenter& m_alerts;
    std::function<void(const std::string&)> m_onSlurmJob;
    std::optional<int64_t> m_lastCheckpoint;
};

} // namespace parallax

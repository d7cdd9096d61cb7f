#pragma once

#include "core/launch/Continuation.h"
#include "core/launch/SupervisorOptions.h"
#include "core/store/RunStore.h"

#include <memory>
#include <optional>

namespace parallax {

// Supervises one run: the heart of `parallax-cli run`. It prepares the run (RunPreparation: the
// spec read and validated once, the launch planned once), creates it and its folder
// (<store>.runs/<id>/ with spec.toml and output.log, the launcher's raw output; RunCreation),
// starts the launcher or submits the batch job (SlurmBatchFollower), reads its output line by line
// (OutputRouter, EventRouter), writes telemetry and logs (StoreFlusher), watches hosts (HostWatch,
// HostStates), names hangs and stragglers (AlertCenter), turns stop requests into SIGUSR1 ->
// SIGTERM -> SIGKILL (StopEscalation), and records the final state (RunOutcome). One Supervisor
// runs one run; use it from one thread (requestStop() excepted).
class Supervisor {
public:
    Supervisor(RunStore& store, SupervisorOptions options);
    ~Supervisor();
    Supervisor(const Supervisor&) = delete;
    Supervisor& operator=(const Supervisor&) = delete;

    // Runs to the end and returns the final record. Before a run exists it throws SpecError (an
    // unreadable spec or cluster profile), SpecRejected (validation errors), PreflightFailed (a
    // host not ready), std::invalid_argument (a launch it cannot plan) or std::runtime_error
    // (nothing to resume). A bad output line never throws.
    RunRecord run();

    // Asks for a graceful stop, as SIGTERM does; a second request escalates at once. Safe from any
    // thread and from a signal handler.
    void requestStop();

    int64_t runId() const;

    // After run(): how the run goes on when it failed by a lost host or a dead rank and
    // launch.on_host_failure = "resume" (the caller resumes from_run with the plan's sets).
    std::optional<ContinuationPlan> continuation() const;

private:
    struct State;
    std::unique_ptr<State> m_state;
};

} // namespace parallax

#pragma once

#include "core/launch/Continuation.h"
#include "core/launch/LauncherFailure.h"
#include "core/launch/SlurmJobs.h"
#include "core/launch/StopPhase.h"
#include "core/spec/RunSpec.h"
#include "core/telemetry/Events.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace parallax {

// How a run ended: its state (RunState), the launcher's exit code and the reason a person reads.
struct RunOutcome {
    RunState state = RunState::Failed;
    std::optional<int> exit_code;
    std::string reason;
};

// What the supervisor knows once the launch has ended, to decide the outcome from.
struct RunEndFacts {
    RunSpec spec;
    int64_t run_id = 0;
    StopPhase stop_phase = StopPhase::None; // how far a stop went
    int stop_signal = 0;                    // what asked for it (SIGTERM, SIGINT...)
    std::string host_lost_reason;           // a host stayed silent past launch.host_timeout_s
    std::string hang_fail_reason;           // telemetry.on_hang = "fail" ended a hang
    std::optional<int64_t> last_checkpoint; // the step of the newest checkpoint a rank reported
    std::optional<RunEndEvent> run_end;     // what the ranks reported
    std::optional<LauncherFailure> failure; // what the launcher said of the first rank that failed
    std::string failure_host;               // the host of that rank, where the launcher did not say
    std::string launcher_name;              // "mpirun", "Slurm job 12"
    int launcher_status = 0;                // the launcher's raw wait status
    SlurmJobStatus job;                     // a batch job: what Slurm said of it last
    std::string job_id;
};

// The launcher's exit decides with the ranks' run_end: a host lost or a hang ended by on_hang =
// "fail" first, then Slurm's time limit, the ranks' own report on a clean exit, a stop request,
// and last the launcher's failure report or exit status.
RunOutcome decideRunOutcome(const RunEndFacts& facts);

// How a batch job's run ended: the ranks' own report where Slurm says the job completed, else
// Slurm's state mapped to the run's (slurmEndStates), with Slurm's words kept.
RunOutcome decideBatchOutcome(const RunEndFacts& facts);

// What launch.on_host_failure = "resume" needs beyond the end: the hosts and how each was last.
struct ContinuationFacts {
    std::optional<std::vector<std::string>> cluster_hosts; // the profile's entries ("name:slots")
    std::map<std::string, HostState> host_states;
    int64_t restarts_done = 0;
    std::optional<int64_t> parent_run; // the run this one resumed, and from where
    std::string resume_dir;
};

// launch.on_host_failure = "resume": a run that failed by a lost host or a dead rank (not by a
// stop, a hang ended by on_hang = "fail", or its own error) goes on from the newest checkpoint
// on the hosts that answer; the outcome's reason says how, or why it cannot. `plan` is set when
// it goes on.
RunOutcome planContinuation(RunOutcome outcome, const RunEndFacts& facts, const ContinuationFacts& hosts,
                            std::optional<ContinuationPlan>& plan);

// "the job reached its time limit (launch.time_limit = 1:00; Slurm's USR1 came ... before it)".
std::string timeLimitReason(const LaunchSpec& launch);

} // namespace parallax

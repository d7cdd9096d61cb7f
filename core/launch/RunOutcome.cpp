#include "core/launch/RunOutcome.h"

#include "core/launch/SignalNames.h"
#include "core/spec/ClusterProfile.h"
#include "core/store/StoreTypes.h"

#include <sys/wait.h>

namespace parallax {

namespace {

std::string stoppedOnRequest(const RunEndFacts& f) {
    return "stopped on request (" + signalName(f.stop_signal) + ")";
}

// The ranks stopped by themselves in a job with a time limit: Slurm's USR1, sent
// launch.signal_margin_s before the limit (--signal), made them checkpoint and stop.
bool stoppedByTimeLimit(const RunEndFacts& f) {
    const LaunchSpec& l = f.spec.launch;
    return f.stop_phase == StopPhase::None && l.target == Target::Slurm && !l.time_limit.empty() &&
           l.signal_margin_s > 0 && f.run_end && f.run_end->status == runStateName(RunState::Stopped);
}

std::string checkpointSaid(const RunEndFacts& f) {
    return f.last_checkpoint ? "; the newest checkpoint is at step " + std::to_string(*f.last_checkpoint) +
                                   " (parallax-cli resume " + std::to_string(f.run_id) + " continues from it)"
                             : std::string("; no checkpoint was written");
}

// The ranks' own run_end. `stopOverrides`: a stop request names the reason of a stopped run even
// where the ranks gave one (a batch job's ranks say only that they stopped).
RunOutcome reportedByTheRanks(const RunEndFacts& f, bool stopOverrides) {
    RunOutcome o;
    const std::optional<RunState> said = runStateNamed(f.run_end->status);
    o.state = said && isTerminal(*said) ? *said : RunState::Failed;
    o.reason = f.run_end->reason;
    if (!said || !isTerminal(*said))
        o.reason = "the worker reported the run's end as '" + f.run_end->status + "', which is no final state" +
                   (o.reason.empty() ? std::string() : ": " + o.reason);
    const bool stoppedAsAsked = o.state == RunState::Stopped && f.stop_phase != StopPhase::None;
    if (stoppedAsAsked && (stopOverrides || o.reason.empty()))
        o.reason = stoppedOnRequest(f);
    if (o.reason.empty() && o.state == RunState::Failed)
        o.reason = "the worker reported a failure without a reason";
    return o;
}

std::string launcherFailed(const RunEndFacts& f, int status, bool clean) {
    const bool rankReportedWhy = f.run_end && f.run_end->status == runStateName(RunState::Failed) && !f.run_end->reason.empty();
    if (rankReportedWhy && (!f.failure || f.failure->kind == LauncherFailure::Kind::ExitCode ||
                            f.failure->kind == LauncherFailure::Kind::Abort)) {
        // The ranks ended on an error they reported themselves (and exited or aborted after it):
        // their words say what happened, the launcher's only how they left.
        return f.run_end->reason;
    }
    std::string reason;
    if (f.failure)
        reason = f.failure->describe(f.failure_host);
    else if (clean)
        reason = "the ranks exited with code 0 without reporting the end of the run (no run_end event)";
    else if (WIFSIGNALED(status))
        reason = f.launcher_name + " was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
                 signalName(WTERMSIG(status)) + ")";
    else
        reason = f.launcher_name + " exited with code " + std::to_string(WEXITSTATUS(status));
    if (rankReportedWhy)
        reason += ": " + f.run_end->reason;
    return reason;
}

} // namespace

std::string timeLimitReason(const LaunchSpec& l) {
    return "the job reached its time limit (" +
           (l.time_limit.empty() ? std::string("the partition's") : "launch.time_limit = " + l.time_limit) +
           (l.signal_margin_s > 0 && !l.time_limit.empty()
                ? "; Slurm's USR1 came launch.signal_margin_s = " + std::to_string(l.signal_margin_s) + " s before it"
                : std::string()) +
           ")";
}

RunOutcome decideRunOutcome(const RunEndFacts& f) {
    const int status = f.launcher_status;
    RunOutcome o;
    if (WIFEXITED(status))
        o.exit_code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
        o.exit_code = 128 + WTERMSIG(status);
    const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    for (const std::string* reason : {&f.host_lost_reason, &f.hang_fail_reason}) {
        if (reason->empty())
            continue;
        o.state = RunState::Failed;
        o.reason = *reason;
        return o;
    }
    if (clean && stoppedByTimeLimit(f)) {
        o.state = RunState::Failed;
        o.reason = timeLimitReason(f.spec.launch) + checkpointSaid(f);
        return o;
    }
    if (clean && f.run_end) {
        const RunOutcome ranks = reportedByTheRanks(f, false);
        o.state = ranks.state;
        o.reason = ranks.reason;
        return o;
    }
    if (f.stop_phase != StopPhase::None) {
        o.state = RunState::Stopped;
        o.reason = stoppedOnRequest(f);
        if (f.stop_phase == StopPhase::Terminate)
            o.reason += "; the ranks were terminated (SIGTERM) before they finished stopping";
        else if (f.stop_phase == StopPhase::Kill)
            o.reason += "; the ranks were killed (SIGKILL) before they finished stopping";
        else if (f.run_end && !f.run_end->reason.empty())
            o.reason += ": " + f.run_end->reason;
        return o;
    }
    o.state = RunState::Failed;
    o.reason = launcherFailed(f, status, clean);
    return o;
}

namespace {

// ExitCode=code:signal, of the job's batch script (exec srun: the ranks' worst).
std::optional<int> batchExitCode(const SlurmJobStatus& job) {
    if (!job.known)
        return std::nullopt;
    const size_t colon = job.exit_code.find(':');
    try {
        const int code = std::stoi(job.exit_code.substr(0, colon));
        const int sig = colon == std::string::npos ? 0 : std::stoi(job.exit_code.substr(colon + 1));
        return sig > 0 ? 128 + sig : code;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

std::string slurmSays(const RunEndFacts& f) {
    const SlurmJobStatus& job = f.job;
    return "Slurm job " + f.job_id + ": " +
           (job.known ? job.job.state + (job.job.reason.empty() ? std::string() : ", reason " + job.job.reason) +
                            (job.exit_code.empty() ? std::string() : ", exit code " + job.exit_code)
                      : "no longer known to Slurm (" + job.error + ")");
}

} // namespace

RunOutcome decideBatchOutcome(const RunEndFacts& f) {
    RunOutcome o;
    o.exit_code = batchExitCode(f.job);
    const bool stopRequested = f.stop_phase != StopPhase::None;
    const SlurmEndState* end = f.job.known ? slurmEndState(f.job.job.state) : nullptr;
    const bool completed = end && std::string(end->state) == "COMPLETED";
    if (!f.hang_fail_reason.empty()) {
        o.state = RunState::Failed;
        o.reason = f.hang_fail_reason;
        return o;
    }
    if ((end && std::string(end->state) == "TIMEOUT") || stoppedByTimeLimit(f)) {
        o.state = RunState::Failed;
        o.reason = timeLimitReason(f.spec.launch) + checkpointSaid(f) + "; " + slurmSays(f);
        return o;
    }
    if (f.run_end && (completed || !f.job.known)) {
        const RunOutcome ranks = reportedByTheRanks(f, true);
        o.state = ranks.state;
        o.reason = ranks.reason;
        return o;
    }
    if (stopRequested && (!end || completed || std::string(end->state) == "CANCELLED")) {
        o.state = RunState::Stopped;
        o.reason = stoppedOnRequest(f);
        if (f.stop_phase == StopPhase::Terminate || f.stop_phase == StopPhase::Kill)
            o.reason += "; the job was cancelled before the ranks finished stopping";
        o.reason += checkpointSaid(f);
        return o;
    }
    o.state = RunState::Failed;
    if (f.run_end && f.run_end->status == runStateName(RunState::Failed) && !f.run_end->reason.empty())
        o.reason = f.run_end->reason + "; ";
    if (!end)
        o.reason += "the ranks did not report the end of the run";
    else if (completed)
        o.reason += "the job completed without the ranks reporting the end of the run (no run_end event)";
    else
        o.reason += end->says;
    if (f.failure && !(f.run_end && !f.run_end->reason.empty()))
        o.reason += "; " + f.failure->describe(f.failure_host);
    o.reason += checkpointSaid(f) + "; " + slurmSays(f);
    return o;
}

RunOutcome planContinuation(RunOutcome o, const RunEndFacts& f, const ContinuationFacts& c,
                            std::optional<ContinuationPlan>& plan) {
    const LaunchSpec& l = f.spec.launch;
    if (o.state != RunState::Failed || l.target != Target::Hosts || l.on_host_failure != OnHostFailure::Resume ||
        !c.cluster_hosts || !f.hang_fail_reason.empty() ||
        (f.stop_phase != StopPhase::None && f.host_lost_reason.empty()))
        return o;
    if (f.host_lost_reason.empty() && f.run_end && f.run_end->status == runStateName(RunState::Failed))
        return o; // the ranks failed on an error of their own: it would fail again
    const std::string why = "; launch.on_host_failure = \"resume\": ";
    if (c.restarts_done >= l.max_restarts) {
        o.reason += why + "launch.max_restarts = " + std::to_string(l.max_restarts) +
                    " restart(s) are used up, so it does not go on";
        return o;
    }
    std::vector<std::string> answering, lost;
    for (const std::string& entry : *c.cluster_hosts) {
        const std::optional<HostSlots> h = parseHostSlots(entry);
        const std::string name = h ? h->name : entry;
        const auto state = c.host_states.find(name);
        if (state != c.host_states.end() && state->second != HostState::Answering)
            lost.push_back(name);
        else
            answering.push_back(entry);
    }
    // From this run's newest checkpoint, or, when it wrote none, from the one it resumed.
    int64_t from = f.run_id;
    if (!f.last_checkpoint) {
        if (!c.parent_run || c.resume_dir.empty()) {
            o.reason += why + "no checkpoint was written to continue from (train.checkpoint_every = " +
                        std::to_string(f.spec.train.checkpoint_every) + ")";
            return o;
        }
        from = *c.parent_run;
    }
    ContinuationResult planned = parallax::planContinuation(f.spec, answering, lost);
    if (!planned.plan) {
        o.reason += why + "it cannot go on: " + planned.error;
        return o;
    }
    planned.plan->from_run = from;
    o.reason += why + "it goes on from " +
                (f.last_checkpoint ? "the checkpoint at step " + std::to_string(*f.last_checkpoint)
                                   : "the newest checkpoint of run " + std::to_string(from)) +
                ", " + planned.plan->said;
    plan = planned.plan;
    return o;
}

} // namespace parallax

// How a run ended, decided from what the supervisor saw: the launcher's exit and report, the
// ranks' run_end, a stop, a lost host, Slurm's word on a batch job.
#include "core/launch/LauncherFailureParser.h"
#include "core/launch/RunOutcome.h"
#include "core/store/StoreTypes.h"

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <csignal>
#include <sstream>

using namespace parallax;

namespace {

// The block of mpirun 4.1.4's report that names a rank killed by SIGKILL (stderr, untagged).
const char* kRankKilled = "------------------------------------------------------------------------\n"
                          "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).\n"
                          "------------------------------------------------------------------------";

std::optional<LauncherFailure> parsed(const std::string& output) {
    LauncherFailureParser parser;
    std::istringstream lines(output);
    for (std::string line; std::getline(lines, line);)
        parser.feed(line);
    parser.finish();
    return parser.failure();
}

// The ranks' run_end, whose status is the state's name on the wire.
RunEndEvent runEnd(RunState status, const std::string& reason = {}) {
    RunEndEvent e;
    e.status = runStateName(status);
    e.reason = reason;
    return e;
}

RunEndFacts localFacts() {
    RunEndFacts f;
    f.run_id = 7;
    f.launcher_name = "mpirun";
    f.launcher_status = W_EXITCODE(0, 0);
    return f;
}

RunEndFacts batchFacts(const std::string& state, const std::string& exitCode) {
    RunEndFacts f;
    f.run_id = 9;
    f.spec.launch.target = Target::Slurm;
    f.spec.launch.slurm_mode = SlurmMode::Batch;
    f.job_id = "12";
    f.launcher_name = "Slurm job 12";
    f.job.known = true;
    f.job.job.state = state;
    f.job.exit_code = exitCode;
    return f;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

} // namespace

TEST(RunOutcome, TheRanksReportOnACleanExitDecides) {
    RunEndFacts f = localFacts();
    f.run_end = runEnd(RunState::Succeeded);
    const RunOutcome o = decideRunOutcome(f);
    EXPECT_EQ(o.state, RunState::Succeeded);
    EXPECT_EQ(o.exit_code, 0);
    EXPECT_EQ(o.reason, "");

    f.run_end = runEnd(RunState::Failed);
    EXPECT_EQ(decideRunOutcome(f).reason, "the worker reported a failure without a reason");
}

TEST(RunOutcome, TheLaunchersReportNamesTheRankTheHostAndTheSignal) {
    RunEndFacts f = localFacts();
    f.launcher_status = W_EXITCODE(137, 0);
    f.failure = parsed(kRankKilled);
    ASSERT_TRUE(f.failure);
    f.failure_host = "vm";
    const RunOutcome o = decideRunOutcome(f);
    EXPECT_EQ(o.state, RunState::Failed);
    EXPECT_EQ(o.exit_code, 137);
    EXPECT_TRUE(contains(o.reason, "rank 1")) << o.reason;
    EXPECT_TRUE(contains(o.reason, "signal 9")) << o.reason;

    // Without a report, the launcher's own end is said.
    f.failure.reset();
    f.launcher_status = W_EXITCODE(0, SIGKILL);
    const RunOutcome killed = decideRunOutcome(f);
    EXPECT_EQ(killed.exit_code, 128 + SIGKILL);
    EXPECT_EQ(killed.reason, "mpirun was killed by signal 9 (SIGKILL)");
    f.launcher_status = W_EXITCODE(0, 0);
    EXPECT_EQ(decideRunOutcome(f).reason,
              "the ranks exited with code 0 without reporting the end of the run (no run_end event)");
}

TEST(RunOutcome, TheRanksOwnWordsWinOverTheLaunchersExitCode) {
    RunEndFacts f = localFacts();
    f.launcher_status = W_EXITCODE(3, 0);
    f.run_end = runEnd(RunState::Failed, "data.path: no such file");
    f.failure = LauncherFailure{};
    f.failure->kind = LauncherFailure::Kind::ExitCode;
    f.failure->rank = 0;
    f.failure->exit_code = 3;
    EXPECT_EQ(decideRunOutcome(f).reason, "data.path: no such file");
    // A rank killed by a signal is how it left, not why: both are said.
    f.failure = parsed(kRankKilled);
    const std::string reason = decideRunOutcome(f).reason;
    EXPECT_TRUE(contains(reason, "signal 9")) << reason;
    EXPECT_TRUE(contains(reason, ": data.path: no such file")) << reason;
}

TEST(RunOutcome, AStopSaysHowFarItWent) {
    RunEndFacts f = localFacts();
    f.stop_signal = SIGTERM;
    f.stop_phase = StopPhase::Graceful;
    f.run_end = runEnd(RunState::Stopped);
    EXPECT_EQ(decideRunOutcome(f).state, RunState::Stopped);
    EXPECT_EQ(decideRunOutcome(f).reason, "stopped on request (SIGTERM)");

    f.launcher_status = W_EXITCODE(0, SIGKILL);
    f.stop_phase = StopPhase::Kill;
    const RunOutcome killed = decideRunOutcome(f);
    EXPECT_EQ(killed.state, RunState::Stopped);
    EXPECT_EQ(killed.reason,
              "stopped on request (SIGTERM); the ranks were killed (SIGKILL) before they finished stopping");
}

TEST(RunOutcome, ALostHostOrAFailedHangDecidesBeforeAnythingElse) {
    RunEndFacts f = localFacts();
    f.run_end = runEnd(RunState::Succeeded);
    f.hang_fail_reason = "hang: rank 1 never entered all_reduce";
    EXPECT_EQ(decideRunOutcome(f).state, RunState::Failed);
    EXPECT_EQ(decideRunOutcome(f).reason, f.hang_fail_reason);
    f.host_lost_reason = "node2 has not answered for 30 s";
    EXPECT_EQ(decideRunOutcome(f).reason, f.host_lost_reason);
}

TEST(RunOutcome, RanksStoppedBySlurmsTimeLimitSignalFailTheRunNamingTheCheckpoint) {
    RunEndFacts f = localFacts();
    f.spec.launch.target = Target::Slurm;
    f.spec.launch.time_limit = "10";
    f.spec.launch.signal_margin_s = 60;
    f.run_end = runEnd(RunState::Stopped, "stopped on SIGUSR1");
    f.last_checkpoint = 40;
    const RunOutcome o = decideRunOutcome(f);
    EXPECT_EQ(o.state, RunState::Failed);
    EXPECT_EQ(o.reason, "the job reached its time limit (launch.time_limit = 10; Slurm's USR1 came "
                        "launch.signal_margin_s = 60 s before it); the newest checkpoint is at step 40 "
                        "(parallax-cli resume 7 continues from it)");
    EXPECT_EQ(timeLimitReason(LaunchSpec{}), "the job reached its time limit (the partition's)");
}

TEST(RunOutcome, ABatchJobEndsAsSlurmAndTheRanksSay) {
    RunEndFacts done = batchFacts("COMPLETED", "0:0");
    done.run_end = runEnd(RunState::Succeeded);
    EXPECT_EQ(decideBatchOutcome(done).state, RunState::Succeeded);
    EXPECT_EQ(decideBatchOutcome(done).exit_code, 0);

    RunEndFacts timeout = batchFacts("TIMEOUT", "0:15");
    const RunOutcome late = decideBatchOutcome(timeout);
    EXPECT_EQ(late.state, RunState::Failed);
    EXPECT_EQ(late.exit_code, 128 + 15);
    EXPECT_EQ(late.reason, "the job reached its time limit (the partition's); no checkpoint was written; "
                           "Slurm job 12: TIMEOUT, exit code 0:15");

    RunEndFacts cancelled = batchFacts("CANCELLED by 0", "0:9");
    cancelled.stop_phase = StopPhase::Terminate;
    cancelled.stop_signal = SIGINT;
    const RunOutcome stopped = decideBatchOutcome(cancelled);
    EXPECT_EQ(stopped.state, RunState::Stopped);
    EXPECT_EQ(stopped.reason, "stopped on request (SIGINT); the job was cancelled before the ranks finished "
                              "stopping; no checkpoint was written");

    RunEndFacts failed = batchFacts("FAILED", "1:0");
    failed.job.job.reason = "NonZeroExitCode";
    EXPECT_EQ(decideBatchOutcome(failed).reason, "the job failed; no checkpoint was written; Slurm job 12: "
                                                 "FAILED, reason NonZeroExitCode, exit code 1:0");

    RunEndFacts forgotten = batchFacts("", "");
    forgotten.job.known = false;
    forgotten.job.error = "Invalid job id specified";
    EXPECT_EQ(decideBatchOutcome(forgotten).reason,
              "the ranks did not report the end of the run; no checkpoint was written; Slurm job 12: no longer "
              "known to Slurm (Invalid job id specified)");
}

namespace {

RunEndFacts lostHostFacts() {
    RunEndFacts f = localFacts();
    f.spec.launch.target = Target::Hosts;
    f.spec.launch.on_host_failure = OnHostFailure::Resume;
    f.spec.launch.max_restarts = 2;
    f.spec.parallel.dp = 2;
    f.spec.train.global_batch = 8;
    f.spec.train.micro_batch = 4;
    f.host_lost_reason = "node2 has not answered for 30 s (rank 1 run there): the run was ended on every host";
    f.stop_phase = StopPhase::Kill;
    f.last_checkpoint = 20;
    return f;
}

ContinuationFacts twoHosts() {
    ContinuationFacts c;
    c.cluster_hosts = std::vector<std::string>{"node1:1", "node2:1"};
    c.host_states = {{"node1", HostState::Answering}, {"node2", HostState::Lost}};
    return c;
}

} // namespace

TEST(RunOutcome, ARunThatLostAHostGoesOnFromItsCheckpointOnTheHostsThatAnswer) {
    const RunEndFacts f = lostHostFacts();
    std::optional<ContinuationPlan> plan;
    const RunOutcome o = planContinuation(decideRunOutcome(f), f, twoHosts(), plan);
    ASSERT_TRUE(plan) << o.reason;
    EXPECT_EQ(plan->from_run, 7);
    EXPECT_EQ(plan->dp, 1);
    EXPECT_EQ(o.state, RunState::Failed);
    EXPECT_TRUE(contains(o.reason, "; launch.on_host_failure = \"resume\": it goes on from the checkpoint at step 20, "
                                   "on node1"))
        << o.reason;
}

TEST(RunOutcome, NoContinuationOnceTheRestartsAreUsedOrWithoutACheckpoint) {
    RunEndFacts f = lostHostFacts();
    ContinuationFacts c = twoHosts();
    c.restarts_done = 2;
    std::optional<ContinuationPlan> plan;
    RunOutcome o = planContinuation(decideRunOutcome(f), f, c, plan);
    EXPECT_FALSE(plan);
    EXPECT_TRUE(contains(o.reason, "launch.max_restarts = 2 restart(s) are used up")) << o.reason;

    c.restarts_done = 0;
    f.last_checkpoint.reset();
    o = planContinuation(decideRunOutcome(f), f, c, plan);
    EXPECT_FALSE(plan);
    EXPECT_TRUE(contains(o.reason, "no checkpoint was written to continue from")) << o.reason;
    // A run that resumed another goes on from that one's checkpoint.
    c.parent_run = 3;
    c.resume_dir = "/runs/3/checkpoints";
    o = planContinuation(decideRunOutcome(f), f, c, plan);
    ASSERT_TRUE(plan) << o.reason;
    EXPECT_EQ(plan->from_run, 3);
}

TEST(RunOutcome, ARankThatFailedOnItsOwnErrorOrAStopDoesNotGoOn) {
    RunEndFacts f = lostHostFacts();
    f.host_lost_reason.clear();
    f.stop_phase = StopPhase::None;
    f.launcher_status = W_EXITCODE(1, 0);
    f.run_end = runEnd(RunState::Failed, "loss is nan");
    std::optional<ContinuationPlan> plan;
    const RunOutcome own = planContinuation(decideRunOutcome(f), f, twoHosts(), plan);
    EXPECT_FALSE(plan);
    EXPECT_EQ(own.reason, "loss is nan");

    f.run_end.reset();
    f.stop_phase = StopPhase::Graceful;
    f.stop_signal = SIGTERM;
    const RunOutcome stopped = planContinuation(decideRunOutcome(f), f, twoHosts(), plan);
    EXPECT_FALSE(plan);
    EXPECT_EQ(stopped.state, RunState::Stopped);
}

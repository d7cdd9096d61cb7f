// launch.slurm_mode = "batch" against a real Slurm (tests/support/TestSlurm): the supervisor submits
// a job script with sbatch and follows the job; the job trains as one process does, waits in the
// queue with Slurm's reason and place, outlives a killed supervisor, and `attach` (or `stop`)
// follows it again to its end with every step stored once.

#include "core/store/RunStore.h"
#include "tests/cluster/ClusterSupport.h"
#include "tests/support/Process.h"
#include "tests/support/TestHosts.h"
#include "tests/support/TestSlurm.h"
#include "tests/support/WaitUntil.h"
#include "tests/trainer/support/WorkerRun.h"

#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <sstream>

using namespace parallax;
using namespace parallax::testing;

namespace {

// The run's row, or nothing while the store cannot be read.
std::optional<RunRecord> runNamed(const std::string& store, const std::string& name) {
    try {
        return RunStore(store).findRun(name);
    } catch (const StoreError&) {
        return std::nullopt;
    }
}

size_t storedSteps(const std::string& store, int64_t run) {
    try {
        return RunStore(store).metrics(run).size();
    } catch (const StoreError&) {
        return 0;
    }
}

// Step events in the job's output (the run folder's output.log, which Slurm writes).
size_t stepLines(const std::string& runDir) {
    std::ifstream in(runDir + "/output.log");
    size_t n = 0;
    for (std::string line; std::getline(in, line);)
        if (line.find("\"ev\":\"step\"") != std::string::npos) ++n;
    return n;
}

// Every step from 0 to steps - 1 stored exactly once.
void expectEveryStepOnce(const RunStore& db, int64_t run, int steps) {
    const auto metrics = db.metrics(run);
    ASSERT_EQ(metrics.size(), static_cast<size_t>(steps));
    for (int i = 0; i < steps; ++i) EXPECT_EQ(metrics[static_cast<size_t>(i)].step, i);
}

TEST(SlurmBatch, TrainsLikeOneProcessAndKeepsTheJob) {
    if (const std::string why = TestSlurm::available(); !why.empty()) GTEST_SKIP() << why;
    TempDir tmp;
    const CliRun one = runThroughCli(tmp.path(), "one-process", tinySpec("one-process", {}, "target = \"local\"\n"));
    ASSERT_EQ(one.result.exitCode, 0) << one.result.output;
    TestSlurm slurm(1, 4);
    const CliRun batch = runThroughCli(tmp.path(), "in-batch", batchSpec("in-batch", 6));
    ASSERT_EQ(batch.result.exitCode, 0) << batch.result.output;
    ASSERT_TRUE(batch.record.has_value());
    EXPECT_EQ(batch.record->state, RunState::Succeeded) << batch.record->exit_reason;
    EXPECT_NE(batch.record->launch_command.find("sbatch --parsable --job-name=in-batch"), std::string::npos)
        << batch.record->launch_command;
    ASSERT_EQ(batch.losses.size(), 6u) << batch.result.output;
    EXPECT_LT(maxRelativeDifference(one.losses, batch.losses), 1e-5);
    const std::optional<SlurmJob> job = RunStore(tmp.path() + "/parallax.db").slurmJob(batch.record->id);
    ASSERT_TRUE(job.has_value());
    EXPECT_EQ(job->mode, SlurmMode::Batch);
    EXPECT_EQ(job->state, "COMPLETED");
    EXPECT_EQ(job->nodes, slurm.nodeNames().front());
    EXPECT_NE(batch.show.find(job->job_id + " (batch), COMPLETED on " + slurm.nodeNames().front()),
              std::string::npos)
        << batch.show;
    std::ifstream script(batch.record->run_dir + "/job.sh");
    std::stringstream text;
    text << script.rdbuf();
    EXPECT_NE(text.str().find("exec srun --label -n 2 --mpi=pmix"), std::string::npos) << text.str();
    EXPECT_TRUE(waitUntil([&] { return slurm.queueEmpty(); }, std::chrono::seconds(20)));
}

// Two nodes, one slurmd in each test host: the batch job's srun puts a rank on each host, and the
// run trains as one process does.
TEST(SlurmBatch, TwoNodesOfTestHostsTrainLikeOneProcess) {
    if (const std::string why = TestSlurm::available(); !why.empty()) GTEST_SKIP() << why;
    if (const std::string why = TestHosts::available(); !why.empty()) GTEST_SKIP() << why;
    TempDir tmp;
    const CliRun one = runThroughCli(tmp.path(), "one-process", tinySpec("one-process", {}, "target = \"local\"\n"));
    ASSERT_EQ(one.result.exitCode, 0) << one.result.output;
    TestHosts hosts(2);
    {
        TestSlurm slurm(hosts);
        std::string text = batchSpec("two-nodes", 6);
        text.replace(text.find("slurm_mode"), 0, "nodes = 2\ntasks_per_node = 1\n");
        const CliRun batch = runThroughCli(tmp.path(), "two-nodes", text);
        ASSERT_EQ(batch.result.exitCode, 0) << batch.result.output;
        ASSERT_TRUE(batch.record.has_value());
        EXPECT_EQ(batch.record->state, RunState::Succeeded) << batch.record->exit_reason;
        EXPECT_EQ(batch.runStartHosts, hosts.names()) << "one rank on each host";
        ASSERT_EQ(batch.losses.size(), 6u) << batch.result.output;
        EXPECT_LT(maxRelativeDifference(one.losses, batch.losses), 1e-5);
        const std::optional<SlurmJob> job = RunStore(tmp.path() + "/parallax.db").slurmJob(batch.record->id);
        ASSERT_TRUE(job.has_value());
        EXPECT_EQ(job->state, "COMPLETED");
        EXPECT_TRUE(waitUntil([&] { return slurm.queueEmpty(); }, std::chrono::seconds(20)));
    }
}

TEST(SlurmBatch, AQueuedRunShowsSlurmsReasonAndPlace) {
    if (const std::string why = TestSlurm::available(); !why.empty()) GTEST_SKIP() << why;
    TempDir tmp;
    TestSlurm slurm(1, 4);
    // Every CPU of the node taken: the run's job has to wait.
    const SlurmCommandResult blocker =
        slurm.run({"sbatch", "--parsable", "-n", "4", "--output=/dev/null", "--wrap", "sleep 600"});
    ASSERT_EQ(blocker.exitCode, 0) << blocker.output;
    const std::string blockerId = blocker.output.substr(0, blocker.output.find_first_of(";\n"));
    ASSERT_TRUE(waitUntil([&] { return slurm.nodeState(0) == "allocated"; }, std::chrono::seconds(30)));

    const std::string store = tmp.path() + "/parallax.db";
    std::ofstream(tmp.path() + "/waits.toml") << batchSpec("waits", 6);
    BackgroundProcess run = startProcess({cli(), "--store", store, "run", tmp.path() + "/waits.toml"},
                                         tmp.path() + "/run.out");
    std::optional<SlurmJob> job;
    ASSERT_TRUE(waitUntil(
        [&] {
            const std::optional<RunRecord> r = runNamed(store, "waits");
            if (!r) return false;
            try {
                job = RunStore(store).slurmJob(r->id);
            } catch (const StoreError&) {
                return false;
            }
            return job && job->state == "PENDING" && !job->reason.empty() && job->queue_position > 0;
        },
        std::chrono::seconds(30)))
        << run.output();
    EXPECT_EQ(runNamed(store, "waits")->state, RunState::Queued);
    EXPECT_EQ(job->queue_position, 1);
    const ProcessResult show = runProcess({cli(), "--store", store, "show", "waits"});
    EXPECT_NE(show.output.find("PENDING (" + job->reason + "), place 1 in the queue"), std::string::npos)
        << show.output;

    // Once the node is free the job runs and the run ends as usual.
    ASSERT_EQ(slurm.run({"scancel", blockerId}).exitCode, 0);
    EXPECT_EQ(run.wait(), 0) << run.output();
    RunStore db(store);
    const RunRecord r = *db.findRun("waits");
    EXPECT_EQ(r.state, RunState::Succeeded) << r.exit_reason;
    expectEveryStepOnce(db, r.id, 6);
}

TEST(SlurmBatch, TheJobOutlivesAKilledSupervisorAndAttachFollowsItToTheEnd) {
    if (const std::string why = TestSlurm::available(); !why.empty()) GTEST_SKIP() << why;
    TempDir tmp;
    TestSlurm slurm(1, 4);
    const int steps = 400;
    const std::string store = tmp.path() + "/parallax.db";
    std::ofstream(tmp.path() + "/outlives.toml") << batchSpec("outlives", steps);
    BackgroundProcess run = startProcess({cli(), "--store", store, "run", tmp.path() + "/outlives.toml"},
                                         tmp.path() + "/run.out");
    std::optional<RunRecord> r;
    ASSERT_TRUE(waitUntil(
        [&] {
            r = runNamed(store, "outlives");
            return r && storedSteps(store, r->id) >= 3;
        },
        std::chrono::seconds(120)))
        << run.output();

    ASSERT_EQ(::kill(run.pid, SIGKILL), 0);
    run.wait();
    const size_t atKill = stepLines(r->run_dir);
    ASSERT_LT(atKill, static_cast<size_t>(steps)) << "the run ended before its supervisor was killed";
    // The job trains on with nobody following it, and the store is not told.
    EXPECT_TRUE(waitUntil([&] { return stepLines(r->run_dir) > atKill + 5; }, std::chrono::seconds(60)));
    EXPECT_FALSE(slurm.queueEmpty());
    const size_t storedThen = storedSteps(store, r->id);
    EXPECT_LT(storedThen, stepLines(r->run_dir));
    EXPECT_EQ(runNamed(store, "outlives")->state, RunState::Running) << "a batch run is not lost with its supervisor";

    const ProcessResult attach = runProcess({cli(), "--store", store, "attach", "outlives"});
    EXPECT_EQ(attach.exitCode, 0) << attach.output;
    RunStore db(store);
    const RunRecord end = *db.findRun("outlives");
    EXPECT_EQ(end.state, RunState::Succeeded) << end.exit_reason;
    expectEveryStepOnce(db, end.id, steps);
    EXPECT_TRUE(waitUntil([&] { return slurm.queueEmpty(); }, std::chrono::seconds(20)));
    // A run that ended cannot be followed again.
    const ProcessResult again = runProcess({cli(), "--store", store, "attach", "outlives"});
    EXPECT_EQ(again.exitCode, 4) << again.output;
    EXPECT_NE(again.output.find("has already ended (succeeded)"), std::string::npos) << again.output;
}

TEST(SlurmBatch, StopWithoutASupervisorCheckpointsAndLeavesNoJob) {
    if (const std::string why = TestSlurm::available(); !why.empty()) GTEST_SKIP() << why;
    TempDir tmp;
    TestSlurm slurm(1, 4);
    const std::string store = tmp.path() + "/parallax.db";
    std::ofstream(tmp.path() + "/stopped.toml") << batchSpec("stopped", 100000);
    BackgroundProcess run = startProcess({cli(), "--store", store, "run", tmp.path() + "/stopped.toml"},
                                         tmp.path() + "/run.out");
    std::optional<RunRecord> r;
    ASSERT_TRUE(waitUntil(
        [&] {
            r = runNamed(store, "stopped");
            return r && storedSteps(store, r->id) >= 3;
        },
        std::chrono::seconds(120)))
        << run.output();
    ASSERT_EQ(::kill(run.pid, SIGKILL), 0);
    run.wait();

    const ProcessResult stop = runProcess({cli(), "--store", store, "stop", "stopped", "--wait"});
    EXPECT_EQ(stop.exitCode, 3) << stop.output;
    RunStore db(store);
    const RunRecord end = *db.findRun("stopped");
    EXPECT_EQ(end.state, RunState::Stopped) << end.exit_reason;
    EXPECT_FALSE(db.checkpoints(end.id).empty()) << "USR1 through scancel made the ranks checkpoint";
    EXPECT_TRUE(waitUntil([&] { return slurm.queueEmpty(); }, std::chrono::seconds(30)));
    EXPECT_TRUE(waitUntil([&] { return processesMatching(end.run_dir).empty(); }, std::chrono::seconds(20)));
    // The steps stored before and after the supervisor's death: each once, in order.
    const auto metrics = db.metrics(end.id);
    for (size_t i = 0; i < metrics.size(); ++i) EXPECT_EQ(metrics[i].step, static_cast<int64_t>(i));
}

// A one-minute time limit with a 30 s margin: Slurm's USR1 comes first, the ranks checkpoint and
// stop, and the run says it was the time limit (not a stop someone asked for).
TEST(SlurmBatch, ATimeLimitEndsTheRunFailedWithACheckpoint) {
    if (const std::string why = TestSlurm::available(); !why.empty()) GTEST_SKIP() << why;
    TempDir tmp;
    TestSlurm slurm(1, 4);
    const std::string store = tmp.path() + "/parallax.db";
    std::string text = batchSpec("limited", 100000);
    text.replace(text.find("slurm_mode"), 0, "time_limit = \"1\"\nsignal_margin_s = 30\n");
    std::ofstream(tmp.path() + "/limited.toml") << text;
    const ProcessResult run = runProcess({cli(), "--store", store, "run", tmp.path() + "/limited.toml"});
    EXPECT_EQ(run.exitCode, 1) << run.output;
    RunStore db(store);
    const RunRecord r = *db.findRun("limited");
    EXPECT_EQ(r.state, RunState::Failed);
    EXPECT_NE(r.exit_reason.find("the job reached its time limit (launch.time_limit = 1"), std::string::npos)
        << r.exit_reason;
    const auto checkpoints = db.checkpoints(r.id);
    ASSERT_FALSE(checkpoints.empty()) << r.exit_reason;
    EXPECT_NE(r.exit_reason.find("the newest checkpoint is at step " + std::to_string(checkpoints.back().step)),
              std::string::npos)
        << r.exit_reason;
    EXPECT_TRUE(waitUntil([&] { return slurm.queueEmpty(); }, std::chrono::seconds(30)));
}

} // namespace

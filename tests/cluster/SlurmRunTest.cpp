// parallax-cli with launch.target = "slurm" against a real Slurm (tests/support/TestSlurm): the
// ranks run in an srun job step with the PMIx plugin, train as one process does, and a stop leaves
// no job; a request larger than the partition is refused before anything is submitted.

#include "core/store/RunStore.h"
#include "tests/cluster/ClusterSupport.h"
#include "tests/support/Process.h"
#include "tests/support/TestSlurm.h"
#include "tests/support/WaitUntil.h"
#include "tests/trainer/support/WorkerRun.h"

#include <gtest/gtest.h>

#include <fstream>

using namespace parallax;
using namespace parallax::testing;

namespace {

TEST(SlurmRun, SrunTrainsLikeOneProcessAndNamesTheJob) {
    if (const std::string why = TestSlurm::available(); !why.empty()) GTEST_SKIP() << why;
    TempDir tmp;
    const CliRun one = runThroughCli(tmp.path(), "one-process", tinySpec("one-process", {}, "target = \"local\"\n"));
    ASSERT_EQ(one.result.exitCode, 0) << one.result.output;
    TestSlurm slurm(1, 4);
    const CliRun many = runThroughCli(tmp.path(), "on-slurm", tinySpec("on-slurm", {2, 1}, "target = \"slurm\"\n"));
    ASSERT_EQ(many.result.exitCode, 0) << many.result.output;
    ASSERT_TRUE(many.record.has_value());
    EXPECT_EQ(many.record->state, RunState::Succeeded) << many.record->exit_reason;
    EXPECT_NE(many.record->launch_command.find("srun --label -n 2 --mpi=pmix"), std::string::npos)
        << many.record->launch_command;
    ASSERT_EQ(many.losses.size(), 6u) << many.result.output;
    EXPECT_LT(maxRelativeDifference(one.losses, many.losses), 1e-5);
    EXPECT_NE(many.show.find("slurm job"), std::string::npos) << many.show;
    EXPECT_NE(many.show.find(" on " + slurm.nodeNames().front()), std::string::npos) << many.show;
    // The job the ranks ran in is kept with its Slurm state, as for a batch job.
    const std::optional<SlurmJob> job = RunStore(tmp.path() + "/parallax.db").slurmJob(many.record->id);
    ASSERT_TRUE(job.has_value()) << many.show;
    EXPECT_EQ(job->mode, SlurmMode::Srun);
    EXPECT_FALSE(job->job_id.empty());
    EXPECT_EQ(job->nodes, slurm.nodeNames().front());
    EXPECT_TRUE(waitUntil([&] { return slurm.queueEmpty(); }, std::chrono::seconds(20)));
}

TEST(SlurmRun, AStopLeavesNoJobAndACheckpoint) {
    if (const std::string why = TestSlurm::available(); !why.empty()) GTEST_SKIP() << why;
    TempDir tmp;
    TestSlurm slurm(1, 4);
    const std::string store = tmp.path() + "/parallax.db";
    const std::string spec = tmp.path() + "/long.toml";
    std::string text = tinySpec("long-slurm", {2, 1}, "target = \"slurm\"\n");
    text.replace(text.find("steps = 6"), 9, "steps = 100000");
    std::ofstream(spec) << text;
    BackgroundProcess run = startProcess({cli(), "--store", store, "run", spec}, tmp.path() + "/run.out");
    ASSERT_TRUE(waitUntil(
        [&] {
            try {
                RunStore db(store);
                const auto r = db.findRun("long-slurm");
                return r && db.metrics(r->id).size() >= 3;
            } catch (const StoreError&) {
                return false;
            }
        },
        std::chrono::seconds(120)))
        << run.output();
    EXPECT_FALSE(slurm.queueEmpty()) << "the ranks run as a Slurm job";
    const ProcessResult stop = runProcess({cli(), "--store", store, "stop", "long-slurm", "--wait"});
    EXPECT_EQ(stop.exitCode, 3) << stop.output;
    EXPECT_EQ(run.wait(), 3) << run.output();
    RunStore db(store);
    const RunRecord r = *db.findRun("long-slurm");
    EXPECT_EQ(r.state, RunState::Stopped) << r.exit_reason;
    EXPECT_FALSE(db.checkpoints(r.id).empty());
    EXPECT_TRUE(waitUntil([&] { return slurm.queueEmpty(); }, std::chrono::seconds(20)));
    EXPECT_TRUE(waitUntil([&] { return processesMatching(r.run_dir).empty(); }, std::chrono::seconds(20)));
}

TEST(SlurmRun, ARequestLargerThanThePartitionIsRefusedBeforeSubmission) {
    if (const std::string why = TestSlurm::available(); !why.empty()) GTEST_SKIP() << why;
    TempDir tmp;
    TestSlurm slurm(1, 4);
    const std::string store = tmp.path() + "/parallax.db";
    auto refused = [&](const std::string& name, const std::string& launch) {
        const std::string spec = tmp.path() + "/" + name + ".toml";
        std::ofstream(spec) << tinySpec(name, {2, 1}, launch);
        return runProcess({cli(), "--store", store, "run", spec});
    };
    ProcessResult r = refused("too-big", "target = \"slurm\"\npartition = \"" + slurm.smallPartition() + "\"\n");
    EXPECT_EQ(r.exitCode, 4) << r.output;
    EXPECT_NE(r.output.find("parallel: dp * tp * pp = 2 processes of 1 CPU(s) each need 2 CPUs, but partition small has 1"),
              std::string::npos)
        << r.output;
    r = refused("no-such", "target = \"slurm\"\npartition = \"gpu\"\n");
    EXPECT_EQ(r.exitCode, 4) << r.output;
    EXPECT_NE(r.output.find("launch.partition = \"gpu\" is no partition of this Slurm; use one of debug, small"),
              std::string::npos)
        << r.output;
    r = refused("too-many-nodes", "target = \"slurm\"\nnodes = 2\ntasks_per_node = 1\n");
    EXPECT_EQ(r.exitCode, 4) << r.output;
    EXPECT_NE(r.output.find("launch.nodes = 2 but partition debug has 1 node(s)"), std::string::npos) << r.output;
    r = refused("gpus", "target = \"slurm\"\ngpus_per_node = 1\n");
    EXPECT_EQ(r.exitCode, 4) << r.output;
    EXPECT_NE(r.output.find("launch.gpus_per_node = 1 but partition debug has no GPUs"), std::string::npos)
        << r.output;
    EXPECT_TRUE(slurm.queueEmpty());
    bool none = true;
    try {
        none = RunStore(store).listRuns().empty();
    } catch (const StoreError&) {
    }
    EXPECT_TRUE(none) << "no run was created";
}

} // namespace

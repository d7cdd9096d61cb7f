// A run whose disk fills while it writes a checkpoint ends failed on every rank, without SIGABRT or a
// hang, saying so (no space left, the step, the host) and which complete checkpoint a resume starts
// from; that checkpoint stays as it was.

#include "tests/trainer/support/SpecText.h"
#include "tests/trainer/support/WorkerRun.h"
#include "tests/trainer/train/TmpfsMount.h"
#include "trainer/train/Checkpoint.h"

#include <gtest/gtest.h>

#include "core/util/Files.h"
#include "core/util/HostName.h"

#include <csignal>

using namespace parallax;
using namespace parallax::testing;

namespace {

TEST(DiskFull, ACheckpointThatDoesNotFitFailsTheRunAndKeepsTheLastCompleteOne) {
    TinySpec spec;
    spec.kind = "gpt";
    spec.dp = 2;
    spec.steps = 10;
    TempDir tmp;
    // One checkpoint's size, measured on the ordinary disk: the run's folder gets room for one and a
    // half, so that step 10's fits and step 20's does not.
    const WorkerRun probe = runWorker(spec.toToml(), 2, tmp.path() + "/probe");
    ASSERT_EQ(probe.exitCode, 0) << probe.output;
    const int64_t checkpoint = diskUsage(probe.lastCheckpoint());
    ASSERT_GT(checkpoint, 0) << probe.output;

    const std::string runDir = tmp.path() + "/run";
    TmpfsMount disk(runDir, checkpoint * 3 / 2 + 16384);
    if (!disk.mounted()) GTEST_SKIP() << disk.error();
    spec.steps = 30;
    spec.checkpointEvery = 10;
    const WorkerRun run = runWorker(spec.toToml(), 2, runDir);

    EXPECT_NE(run.exitCode, 0) << run.output;
    EXPECT_NE(run.exitCode, 128 + SIGABRT) << run.output;
    EXPECT_EQ(run.output.find("unexpected pos"), std::string::npos) << run.output;
    EXPECT_EQ(run.endStatus, "failed") << run.output;
    const std::string dir = joinPath(runDir, "checkpoints");
    EXPECT_NE(run.endReason.find("no space left on device writing checkpoint step 20 on " + hostName() + ", rank "),
              std::string::npos)
        << run.endReason;
    EXPECT_NE(run.endReason.find("the last complete checkpoint is step 10 (" + joinPath(dir, "step_00000010") + ")"),
              std::string::npos)
        << run.endReason;
    ASSERT_EQ(run.steps.size(), 20u) << "training stops at the failed checkpoint";

    EXPECT_FALSE(pathExists(joinPath(dir, "step_00000020.partial")));
    EXPECT_EQ(listCheckpoints(dir), std::vector<std::string>{joinPath(dir, "step_00000010")});
    CheckpointReader reader(dir);
    EXPECT_EQ(reader.meta().step, 10);
    EXPECT_TRUE(reader.warnings().empty());
}

} // namespace

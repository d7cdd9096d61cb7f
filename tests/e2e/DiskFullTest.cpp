// End to end through the product's own path (parallax-cli supervising mpirun and the workers): the
// run's folder sits on a small disk that fills at its second checkpoint while the store does not.
// The run ends failed, not lost, saying that the disk is full and where; nothing of it is left
// running; its first checkpoint is intact and is what a resume reads.

#include "core/store/RunStore.h"
#include "core/util/Files.h"
#include "core/util/HostName.h"
#include "tests/support/Process.h"
#include "tests/trainer/train/TmpfsMount.h"
#include "trainer/train/Checkpoint.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

using namespace parallax;
using namespace parallax::testing;

namespace {

std::string cli() {
    return buildDir() + "/app/parallax-cli";
}

std::string gptSpec(const std::string& name, int64_t steps, int64_t checkpointEvery) {
    return "name = \"" + name + "\"\n"
           "[model]\nkind = \"gpt\"\npreset = \"tiny\"\n"
           "[data]\nkind = \"synthetic\"\n"
           "[train]\nsteps = " + std::to_string(steps) + "\nglobal_batch = 8\nmicro_batch = 4\nlr = 1e-3\nwarmup = 2\n"
           "checkpoint_every = " + std::to_string(checkpointEvery) + "\n"
           "[parallel]\ndp = 2\n"
           "[telemetry]\ndevice_sample_ms = 500\n";
}

bool nothingRunsIn(const std::string& runDir) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!processesMatching(runDir).empty()) {
        if (std::chrono::steady_clock::now() > end) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return true;
}

TEST(DiskFull, ACheckpointThatDoesNotFitFailsTheRunSayingSoAndKeepsTheFirst) {
    TempDir tmp;
    // One checkpoint's size, from a short run on the ordinary disk (it checkpoints at its end).
    const std::string probeStore = tmp.path() + "/probe/parallax.db";
    createDirectories(parentPath(probeStore));
    const std::string probeSpec = tmp.path() + "/probe.toml";
    std::ofstream(probeSpec) << gptSpec("probe", 10, 0);
    const ProcessResult probe = runProcess({cli(), "--store", probeStore, "run", probeSpec});
    ASSERT_EQ(probe.exitCode, 0) << probe.output;
    int64_t checkpointBytes = 0;
    {
        RunStore db(probeStore);
        const auto run = db.findRun("probe");
        ASSERT_TRUE(run.has_value());
        checkpointBytes = diskUsage(joinPath(run->run_dir, "checkpoints/step_00000010"));
    }
    ASSERT_GT(checkpointBytes, 0) << probe.output;

    // Run folders are <store>.runs/<id>: a disk with room for one checkpoint and a half, and for
    // the run's log and spec.
    const std::string store = tmp.path() + "/parallax.db";
    const int64_t diskBytes = checkpointBytes * 3 / 2 + (256 << 10);
    TmpfsMount storeRuns(store + ".runs", diskBytes);
    if (!storeRuns.mounted()) GTEST_SKIP() << storeRuns.error();

    const std::string spec = tmp.path() + "/full.toml";
    std::ofstream(spec) << gptSpec("disk-full", 30, 10);
    const ProcessResult r = runProcess({cli(), "--store", store, "run", spec});
    EXPECT_NE(r.exitCode, 0) << r.output;

    RunStore db(store);
    const auto run = db.findRun("disk-full");
    ASSERT_TRUE(run.has_value()) << r.output;
    EXPECT_EQ(run->state, RunState::Failed) << run->exit_reason;
    EXPECT_NE(run->exit_reason.find("no space left on device"), std::string::npos) << run->exit_reason;
    EXPECT_NE(run->exit_reason.find("checkpoint step 20 on " + hostName()), std::string::npos) << run->exit_reason;
    const std::string dir = joinPath(run->run_dir, "checkpoints");
    EXPECT_NE(run->exit_reason.find("the last complete checkpoint is step 10 (" + joinPath(dir, "step_00000010")),
              std::string::npos)
        << run->exit_reason;
    EXPECT_TRUE(nothingRunsIn(run->run_dir)) << "a worker or mpirun of the run is still running";

    EXPECT_FALSE(pathExists(joinPath(dir, "step_00000020.partial")));
    EXPECT_EQ(listCheckpoints(dir), std::vector<std::string>{joinPath(dir, "step_00000010")});
    const CheckpointReader reader(dir);
    EXPECT_EQ(reader.meta().step, 10);
    EXPECT_TRUE(reader.warnings().empty());
    const auto stored = db.checkpoints(run->id);
    ASSERT_EQ(stored.size(), 1u);
    EXPECT_EQ(stored.front().step, 10);
}

} // namespace

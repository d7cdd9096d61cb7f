// Stop and resume must be invisible in the numbers, also across layouts; a damaged checkpoint must
// give a clear error.

#include "tests/trainer/support/SpecText.h"
#include "tests/trainer/support/WorkerRun.h"

#include <gtest/gtest.h>

#include "core/util/Files.h"
#include "trainer/train/Checkpoint.h"

#include <fstream>

using namespace parallax;
using namespace parallax::testing;

namespace {

std::vector<double> tail(const std::vector<double>& v, size_t from) {
    return std::vector<double>(v.begin() + static_cast<long>(from), v.end());
}

// Each image kind: qwen_image, whose last block leaves parameters without a gradient (their AdamW
// state must resume as it was), and qwen_image_vae, whose samples draw noise of another shape.
class ResumeEachKind : public ::testing::TestWithParam<std::string> {};

TEST_P(ResumeEachKind, StopAtTenAndResumeGivesTheStraightLosses) {
    TinySpec spec;
    spec.kind = GetParam();
    spec.steps = 20;
    spec.dp = 2;
    TempDir tmp;
    const WorkerRun straight = runWorker(spec.toToml(), 2, tmp.path() + "/straight");
    ASSERT_EQ(straight.exitCode, 0) << straight.output;
    ASSERT_EQ(straight.losses().size(), 20u);

    const WorkerRun first = runWorker(spec.toToml(), 2, tmp.path() + "/parts", {"--stop-after", "10"});
    ASSERT_EQ(first.exitCode, 0) << first.output;
    EXPECT_EQ(first.endStatus, "stopped");
    ASSERT_EQ(first.losses().size(), 10u);
    const std::string ckpt = first.lastCheckpoint();
    ASSERT_FALSE(ckpt.empty());
    EXPECT_EQ(baseName(ckpt), "step_00000010");

    const WorkerRun second = runWorker(spec.toToml(), 2, tmp.path() + "/parts",
                                       {"--resume", tmp.path() + "/parts/checkpoints"});
    ASSERT_EQ(second.exitCode, 0) << second.output;
    EXPECT_EQ(second.endStatus, "succeeded");
    ASSERT_EQ(second.losses().size(), 10u);
    EXPECT_EQ(second.steps.front().step, 10);

    std::vector<double> joined = first.losses();
    const std::vector<double> rest = second.losses();
    joined.insert(joined.end(), rest.begin(), rest.end());
    EXPECT_EQ(joined, straight.losses()) << "resume must reproduce the straight run bit for bit";
}

INSTANTIATE_TEST_SUITE_P(Kinds, ResumeEachKind, ::testing::Values("qwen_image", "qwen_image_vae"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(Resume, AnotherDataParallelWidthContinuesTheSameTrajectory) {
    TinySpec spec;
    spec.kind = "gpt";
    spec.steps = 12;
    spec.dp = 2;
    TempDir tmp;
    const WorkerRun straight = runWorker(spec.toToml(), 2, tmp.path() + "/straight");
    ASSERT_EQ(straight.exitCode, 0) << straight.output;
    const WorkerRun first = runWorker(spec.toToml(), 2, tmp.path() + "/a", {"--stop-after", "6"});
    ASSERT_EQ(first.exitCode, 0) << first.output;
    spec.dp = 4;
    const WorkerRun second = runWorker(spec.toToml(), 4, tmp.path() + "/b", {"--resume", first.lastCheckpoint()});
    ASSERT_EQ(second.exitCode, 0) << second.output;
    ASSERT_EQ(second.losses().size(), 6u);
    EXPECT_LT(maxRelativeDifference(second.losses(), tail(straight.losses(), 6)), 1e-5);
}

TEST(Resume, AnotherLayoutContinuesTheSameTrajectory) {
    // Saved by dp=4 (with ZeRO-1 slices), resumed as dp=2 x tp=2 and as tp=2 x pp=2.
    TinySpec spec;
    spec.kind = "gpt";
    spec.layers = 4;
    spec.steps = 8;
    spec.dp = 4;
    spec.zero = 1;
    TempDir tmp;
    const WorkerRun straight = runWorker(spec.toToml(), 4, tmp.path() + "/straight");
    ASSERT_EQ(straight.exitCode, 0) << straight.output;
    const WorkerRun first = runWorker(spec.toToml(), 4, tmp.path() + "/a", {"--stop-after", "4"});
    ASSERT_EQ(first.exitCode, 0) << first.output;
    struct Target {
        int64_t dp, tp, pp;
    };
    for (const Target t : {Target{2, 2, 1}, Target{1, 2, 2}}) {
        TinySpec other = spec;
        other.dp = t.dp;
        other.tp = t.tp;
        other.pp = t.pp;
        other.zero = 0;
        const WorkerRun second = runWorker(other.toToml(), 4, tmp.path() + "/b" + std::to_string(t.pp),
                                           {"--resume", first.lastCheckpoint()});
        ASSERT_EQ(second.exitCode, 0) << second.output;
        ASSERT_EQ(second.losses().size(), 4u);
        EXPECT_LT(maxRelativeDifference(second.losses(), tail(straight.losses(), 4)), 1e-5)
            << "dp" << t.dp << " tp" << t.tp << " pp" << t.pp;
    }
}

TEST(Resume, DamagedCheckpointIsAClearErrorAndAnOlderOneIsUsed) {
    TinySpec spec;
    spec.kind = "gpt";
    spec.steps = 6;
    spec.checkpointEvery = 2;
    TempDir tmp;
    const WorkerRun run = runWorker(spec.toToml(), 1, tmp.path() + "/run");
    ASSERT_EQ(run.exitCode, 0) << run.output;
    const std::string newest = run.lastCheckpoint();
    ASSERT_EQ(baseName(newest), "step_00000006");
    {   // Flip bytes in the middle of the rank file.
        std::fstream f(joinPath(newest, "rank_00000.safetensors"), std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(200);
        f.write("garbage!", 8);
    }
    // Naming the damaged folder itself fails, naming the file and the check that failed.
    const WorkerRun direct = runWorker(spec.toToml(), 1, tmp.path() + "/direct", {"--resume", newest});
    EXPECT_NE(direct.exitCode, 0);
    EXPECT_NE(direct.output.find("rank_00000.safetensors does not match its CRC-32"), std::string::npos) << direct.output;

    // Naming the checkpoints folder falls back to step 4, with a warning.
    const WorkerRun fallback =
        runWorker(spec.toToml(), 1, tmp.path() + "/fallback", {"--resume", parentPath(newest)});
    ASSERT_EQ(fallback.exitCode, 0) << fallback.output;
    ASSERT_FALSE(fallback.steps.empty());
    EXPECT_EQ(fallback.steps.front().step, 4);
    EXPECT_NE(fallback.output.find("trying an earlier checkpoint"), std::string::npos);

    // Every checkpoint damaged: the error names each of them, not only the newest.
    for (const std::string& step : listCheckpoints(parentPath(newest))) {
        std::fstream f(joinPath(step, "rank_00000.safetensors"), std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(200);
        f.write("garbage!", 8);
    }
    const WorkerRun none = runWorker(spec.toToml(), 1, tmp.path() + "/none", {"--resume", parentPath(newest)});
    EXPECT_NE(none.exitCode, 0);
    EXPECT_NE(none.output.find("is damaged (3 of them)"), std::string::npos) << none.output;
    for (const char* step : {"step_00000002", "step_00000004", "step_00000006"})
        EXPECT_NE(none.output.find(std::string(step) + " is damaged: rank_00000.safetensors does not match its CRC-32"), std::string::npos)
            << step << ": " << none.output;
}

TEST(Resume, CheckpointOfAnotherModelIsRefusedNamingTheField) {
    TinySpec spec;
    spec.kind = "gpt";
    spec.steps = 2;
    TempDir tmp;
    const WorkerRun run = runWorker(spec.toToml(), 1, tmp.path() + "/run");
    ASSERT_EQ(run.exitCode, 0) << run.output;
    spec.layers = 3;
    const WorkerRun other = runWorker(spec.toToml(), 1, tmp.path() + "/other", {"--resume", run.lastCheckpoint()});
    EXPECT_NE(other.exitCode, 0);
    EXPECT_NE(other.output.find("model.layers = 2, the spec asks for 3"), std::string::npos) << other.output;
}

} // namespace

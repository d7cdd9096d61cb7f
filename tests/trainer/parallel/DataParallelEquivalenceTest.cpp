// Data parallel must not change the numbers: dp=2 and dp=4 with the same global batch and seed give
// the losses and final weights of one process, step for step.

#include "tests/trainer/support/SpecText.h"
#include "tests/trainer/support/WorkerRun.h"
#include "trainer/train/Checkpoint.h"

#include <gtest/gtest.h>

using namespace parallax;
using namespace parallax::testing;

namespace {

// Largest |a - b| over all parameters, relative to the largest |a|.
double weightDifference(const std::string& ckptA, const std::string& ckptB) {
    CheckpointReader a(ckptA), b(ckptB);
    double worstDiff = 0, scale = 1e-12;
    const auto names = a.names("param");
    EXPECT_EQ(names, b.names("param"));
    for (const std::string& name : names) {
        auto ta = a.full(name, "param"), tb = b.full(name, "param");
        worstDiff = std::max(worstDiff, (ta - tb).abs().max().item<double>());
        scale = std::max(scale, ta.abs().max().item<double>());
    }
    return worstDiff / scale;
}

class DataParallelEquivalence : public ::testing::TestWithParam<std::string> {};

TEST_P(DataParallelEquivalence, SameLossesAndWeightsAsOneProcess) {
    TinySpec spec;
    spec.kind = GetParam();
    spec.steps = 20;
    spec.globalBatch = 8;
    spec.microBatch = 2;

    TempDir tmp;
    spec.dp = 1;
    const WorkerRun one = runWorker(spec.toToml(), 1, tmp.path() + "/dp1");
    ASSERT_EQ(one.exitCode, 0) << one.output;
    ASSERT_EQ(one.losses().size(), 20u) << one.output;
    EXPECT_EQ(one.endStatus, "succeeded");
    // The model learns: the last losses are below the first.
    EXPECT_LT(one.losses().back(), one.losses().front());

    for (int dp : {2, 4}) {
        spec.dp = dp;
        const WorkerRun many = runWorker(spec.toToml(), dp, tmp.path() + "/dp" + std::to_string(dp));
        ASSERT_EQ(many.exitCode, 0) << many.output;
        ASSERT_EQ(many.losses().size(), 20u) << many.output;
        EXPECT_LT(maxRelativeDifference(one.losses(), many.losses()), 1e-5) << "dp=" << dp;
        EXPECT_LT(weightDifference(one.lastCheckpoint(), many.lastCheckpoint()), 1e-5) << "dp=" << dp;
    }
}

INSTANTIATE_TEST_SUITE_P(Models, DataParallelEquivalence, ::testing::Values("gpt", "qwen_image", "qwen_image_vae"),
                         [](const auto& info) { return info.param; });

} // namespace

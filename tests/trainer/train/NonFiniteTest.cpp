// A run whose gradients stop being finite ends with an error that names the step and the fix, never
// applies that update, and keeps the last finite weights in a checkpoint that resumes.

#include "tests/trainer/support/SpecText.h"
#include "tests/trainer/support/WorkerRun.h"

#include <gtest/gtest.h>

#include "core/util/Files.h"

#include <cmath>

using namespace parallax;
using namespace parallax::testing;

namespace {

TEST(NonFiniteGradient, StopsBeforeTheUpdateAndKeepsTheLastFiniteWeights) {
    TinySpec spec;
    spec.kind = "gpt";
    spec.steps = 12;
    spec.dp = 2;
    spec.lr = 1e30; // the first update blows the weights up; the next gradients are not finite
    TempDir tmp;
    const WorkerRun run = runWorker(spec.toToml(), 2, tmp.path() + "/run");
    EXPECT_NE(run.exitCode, 0) << run.output;
    EXPECT_EQ(run.endStatus, "failed") << run.output;
    EXPECT_NE(run.endReason.find("gradient norm is"), std::string::npos) << run.endReason;
    EXPECT_NE(run.endReason.find("not finite"), std::string::npos) << run.endReason;
    EXPECT_NE(run.endReason.find("train.lr"), std::string::npos) << run.endReason;
    ASSERT_LT(run.steps.size(), 12u) << "the run should have stopped early";
    for (const auto& s : run.steps) EXPECT_TRUE(std::isfinite(s.grad_norm)) << "step " << s.step;

    // The failing step's index names the checkpoint: the weights after the steps before it.
    const std::string kept = run.lastCheckpoint();
    ASSERT_FALSE(kept.empty()) << run.output;
    const int64_t failed = static_cast<int64_t>(run.steps.size());
    char expected[32];
    std::snprintf(expected, sizeof expected, "step_%08lld", static_cast<long long>(failed));
    EXPECT_EQ(baseName(kept), expected);
    EXPECT_NE(run.endReason.find(kept), std::string::npos) << run.endReason;

    // The checkpoint loads and the run starts again at the failing step (these blown-up weights fail
    // there again, with the same clear error).
    const WorkerRun resumed = runWorker(spec.toToml(), 2, tmp.path() + "/resumed", {"--resume", kept});
    EXPECT_EQ(resumed.endStatus, "failed") << resumed.output;
    EXPECT_EQ(resumed.endReason.rfind("step " + std::to_string(failed) + ": the gradient norm is", 0), 0u)
        << resumed.endReason;
}

} // namespace

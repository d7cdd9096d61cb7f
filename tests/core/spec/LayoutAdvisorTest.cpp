#include "core/spec/LayoutAdvisor.h"

#include <gtest/gtest.h>

#include <cmath>

namespace parallax {
namespace {

RunSpec gpt() {
    RunSpec s;
    s.model.kind = ModelKind::Gpt;
    s.model.preset = "tiny";
    s.train.global_batch = 16;
    s.train.micro_batch = 2;
    return s;
}

MachineInfo roomy() {
    MachineInfo m;
    m.cores = 64;
    m.ram_bytes = int64_t(256) << 30;
    return m;
}

TEST(StepCost, EachGroupMovesBytesOnlyWhenItHasMoreThanOneRank) {
    RunSpec s = gpt();
    const StepCost one = stepCost(s);
    EXPECT_GT(one.flops, 0);
    EXPECT_EQ(one.bytes(), 0) << "one rank moves nothing";
    s.parallel.dp = 4;
    const StepCost dp = stepCost(s);
    EXPECT_NEAR(dp.flops, one.flops / 4, one.flops * 1e-9) << "the FLOPs are shared";
    EXPECT_GT(dp.dp_bytes, 0);
    EXPECT_EQ(dp.tp_bytes + dp.pp_bytes, 0);
    s.parallel.zero = 3;
    EXPECT_GT(stepCost(s).dp_bytes, dp.dp_bytes) << "ZeRO-3 gathers the weights too";
    s = gpt();
    s.parallel.tp = 2;
    EXPECT_GT(stepCost(s).tp_bytes, 0);
    s = gpt();
    s.parallel.pp = 2;
    const StepCost pp = stepCost(s);
    EXPECT_GT(pp.pp_bytes, 0);
    EXPECT_GT(pp.bubble, 0);
}

TEST(StepTimeModel, CalibrationRecoversTheRatesOfTwoMeasuredSteps) {
    RunSpec s = gpt();
    s.parallel.dp = 4;
    const StepCost small = stepCost(s);
    const StepCost large = stepCost(withGlobalBatchTimes(s, 2));
    EXPECT_NEAR(large.flops, 2 * small.flops, small.flops * 1e-9);
    EXPECT_DOUBLE_EQ(large.dp_bytes, small.dp_bytes) << "the gradients are as large";
    // Steps of a machine doing 5 GFLOP/s per rank and moving 200 MB/s.
    const double flopsPerS = 5e9, bytesPerS = 2e8;
    const auto ms = [&](const StepCost& c) { return 1000.0 * (c.flops / flopsPerS + c.bytes() / bytesPerS); };
    const StepTimeModel m = calibrateStepTime(small, ms(small), large, ms(large));
    EXPECT_NEAR(m.flops_per_s, flopsPerS, flopsPerS * 1e-6);
    EXPECT_NEAR(m.bytes_per_s, bytesPerS, bytesPerS * 1e-6);
    RunSpec other = gpt();
    other.parallel.tp = 2;
    other.parallel.dp = 2;
    EXPECT_NEAR(m.predictMs(stepCost(other)), ms(stepCost(other)), 1e-6);

    // Noise that leaves the communication no time: free, never negative.
    const StepTimeModel noisy = calibrateStepTime(small, 100.0, large, 230.0);
    EXPECT_TRUE(std::isinf(noisy.bytes_per_s));
    EXPECT_NEAR(noisy.predictMs(small), 100.0, 1e-6);
}

TEST(LayoutOptions, EveryShapeOfTheDevicesWithItsZeroStagesAndWhyNot) {
    RunSpec s = gpt();
    s.parallel.stage_layers = {1, 1};
    const std::vector<LayoutOption> options = layoutOptions(s, 4, roomy(), 0);
    ASSERT_EQ(options.size(), 15u); // (4,1,1) (2,2,1) (2,1,2) x 4 ZeRO stages, (1,4,1) (1,2,2) (1,1,4)
    EXPECT_EQ(options.front().label, "dp4 tp1 pp1 zero0");
    EXPECT_EQ(options.back().label, "dp1 tp4 pp1 zero0");
    for (const LayoutOption& o : options) {
        EXPECT_EQ(o.spec.parallel.dp * o.spec.parallel.tp * o.spec.parallel.pp, 4) << o.label;
        EXPECT_TRUE(o.spec.parallel.stage_layers.empty()) << "a split for another pp is dropped";
        EXPECT_EQ(o.spec.train.global_batch, 16) << "the optimizer's batch is kept";
        if (o.excluded.empty()) {
            EXPECT_GT(o.memory_bytes, 0) << o.label;
        }
    }
    for (const LayoutOption& o : options)
        if (o.label == "dp1 tp1 pp4 zero0") {
            EXPECT_NE(o.excluded.find("parallel.pp"), std::string::npos) << "4 stages of the tiny model's 2 blocks";
        }
    // A limit below what any layout needs excludes every one the validator accepts, saying so.
    const std::vector<LayoutOption> tight = layoutOptions(s, 4, roomy(), 1.0);
    for (size_t i = 0; i < options.size(); ++i) {
        if (options[i].excluded.empty()) {
            EXPECT_NE(tight[i].excluded.find("per device"), std::string::npos) << tight[i].label << ": " << tight[i].excluded;
        }
    }
    // The micro-batch follows a replica's share: 6 samples over dp = 2 leave 3 each, which 2 does not divide.
    RunSpec odd = gpt();
    odd.train.global_batch = 6;
    odd.train.micro_batch = 2;
    for (const LayoutOption& o : layoutOptions(odd, 2, roomy(), 0))
        if (o.spec.parallel.dp == 2) {
            EXPECT_EQ(o.spec.train.micro_batch, 1) << "3 per replica: 1 divides it, 2 does not";
        }
}

} // namespace
} // namespace parallax

#include "core/spec/LayoutAdvisor.h"

#include "core/spec/Estimates.h"
#include "core/spec/ModelDims.h"
#include "core/spec/ModelKinds.h"

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

// Every collective and transfer pays a latency however small it is: counted in ring steps.
TEST(StepCost, CountsTheRingStepsOfEachGroupsCollectives) {
    RunSpec s = gpt(); // 2 blocks, 8 micro-batches of 2 on one replica
    EXPECT_EQ(stepCost(s).hops, 0) << "one rank takes part in none";
    s.parallel.dp = 4; // 2 micro-batches each; the tiny model's gradients fit one 25 MiB bucket
    EXPECT_DOUBLE_EQ(stepCost(s).hops, 1 * 2.0 * 3);
    s.parallel.zero = 3; // and every block gathered forward and backward, each micro-batch
    EXPECT_DOUBLE_EQ(stepCost(s).hops, 2.0 * 3 + 2.0 * 2 * 2 * 3);
    s = gpt();
    s.parallel.tp = 2; // four all-reduces per block and micro-batch, two ring steps each
    EXPECT_DOUBLE_EQ(stepCost(s).hops, 4.0 * 2 * 8 * 2);
    s = gpt();
    s.parallel.pp = 2; // an activation out and a gradient back per micro-batch
    EXPECT_DOUBLE_EQ(stepCost(s).hops, 2.0 * 8);
}

// All-reduces of a few sizes on 4 ranks of a machine with a 50 us ring step and 1 GB/s: the fit
// finds both, and they replace the two steps' estimate of the communication.
TEST(StepTimeModel, TimedAllReducesGiveTheLatencyAndTheBandwidth) {
    RunSpec small = gpt();
    small.parallel.dp = 4;
    const RunSpec large = withGlobalBatchTimes(small, 2);
    const double hop = 50e-6, bandwidth = 1e9;
    std::vector<MeasuredCollective> timed;
    for (double bytes : {8192.0, 131072.0, 1048576.0, 8388608.0})
        timed.push_back({4, bytes, 1000.0 * (6 * hop + 1.5 * bytes / bandwidth)});
    const StepTimeModel m = calibrateStepTime(small, 100.0, large, 180.0, {{}, timed});
    EXPECT_NEAR(m.hop_latency_s, hop, hop * 1e-6);
    EXPECT_NEAR(m.bytes_per_s, bandwidth, bandwidth * 1e-6);
    EXPECT_TRUE(m.unit_ms.empty());
    // The rest of the calibration's step is compute: it comes out as measured.
    EXPECT_NEAR(m.predictMs(small), 100.0, 1e-9);
    EXPECT_NEAR(m.predictMs(stepCost(small)), 100.0, 1e-9);

    // All-reduces slower than the whole step did not time what it does: the two steps' estimate stays.
    std::vector<MeasuredCollective> slow = timed;
    for (MeasuredCollective& c : slow) c.ms *= 1e4;
    const StepTimeModel twoSteps = calibrateStepTime(stepCost(small), 100.0, stepCost(large), 180.0);
    const StepTimeModel kept = calibrateStepTime(small, 100.0, large, 180.0, {{}, slow});
    EXPECT_EQ(kept.hop_latency_s, 0);
    EXPECT_DOUBLE_EQ(kept.flops_per_s, twoSteps.flops_per_s);

    // Tensor parallelism's many small all-reduces: each pays its ring steps' latency.
    RunSpec tp = gpt();
    tp.parallel.tp = 4;
    const StepCost cost = stepCost(tp);
    EXPECT_NEAR(m.commMs(cost), 1000.0 * (cost.bytes() / bandwidth + cost.hops * hop), 1e-9);
    EXPECT_GT(cost.hops * hop, cost.bytes() / bandwidth) << "latency is most of it for activations this small";

    // Times that fall with size leave a bandwidth that costs nothing, never a negative one.
    const StepTimeModel odd = calibrateStepTime(small, 100.0, large, 180.0, {{}, {{4, 1e3, 5.0}, {4, 1e6, 1.0}}});
    EXPECT_TRUE(std::isinf(odd.bytes_per_s));
    EXPECT_GE(odd.hop_latency_s, 0);
}

// With each unit's time, a pipeline's step is its slowest stage's: a head ten times a block makes
// the stage that holds it the one the others wait for, which FLOPs do not see.
TEST(StepTimeModel, UnitTimesWeighTheSlowestStage) {
    RunSpec small = gpt();
    small.model.layers = 4;
    small.parallel.dp = 4;
    const RunSpec large = withGlobalBatchTimes(small, 2);
    const ModelDims dims = resolveModel(small.model);
    const std::vector<UnitEstimate> units = modelKindInfo(dims.kind).units(dims);
    ASSERT_EQ(units.size(), 6u); // embedding, 4 blocks, head
    std::vector<MeasuredUnit> unitMs;
    for (int u = 0; u < 6; ++u)
        for (int replica = 0; replica < 4; ++replica) { // every dp rank reports its own
            const double ms = u == 5 ? 20.0 + replica : u == 0 ? 1.0 : 2.0;
            unitMs.push_back({u, ms / 4, ms * 3 / 4});
        }
    const StepTimeModel m = calibrateStepTime(small, 100.0, large, 180.0, {unitMs, {}});
    ASSERT_EQ(m.unit_ms.size(), 6u);
    EXPECT_DOUBLE_EQ(m.unit_ms[5], 21.5) << "replicas are averaged";
    EXPECT_EQ(m.unit_micro_batch, 2);
    // The calibration's own compute (80 ms: 100 and 180 ms at one and two times the FLOPs, no
    // communication left) is what its units add up to, 2 micro-batches of 30.5 ms, times the scale.
    EXPECT_NEAR(m.unit_scale * 2 * 30.5, 80.0, 1e-9);

    RunSpec pp = small;
    pp.parallel.dp = 1;
    pp.parallel.pp = 2;
    const StepCost ppCost = stepCost(pp);
    const std::vector<int> bounds = pipelineUnitBounds(pp, dims);
    double second = 0;
    for (int u = bounds[1]; u < bounds[2]; ++u) second += m.unit_ms[static_cast<size_t>(u)];
    const double expected = m.unit_scale * second * 8 / (1.0 - ppCost.bubble) + m.commMs(ppCost);
    EXPECT_NEAR(m.predictMs(pp), expected, 1e-9);
    EXPECT_GT(m.predictMs(pp), m.predictMs(ppCost)) << "by FLOPs the head weighs little";

    // Tensor parallelism divides each unit.
    RunSpec tp = small;
    tp.parallel.dp = 2;
    tp.parallel.tp = 2;
    const StepCost tpCost = stepCost(tp);
    EXPECT_NEAR(m.predictMs(tp) - m.commMs(tpCost), m.unit_scale * 30.5 / 2 * 4, 1e-9);

    // Times of units the model does not have are refused.
    EXPECT_THROW(calibrateStepTime(small, 100.0, large, 180.0, {{{6, 1.0, 1.0}}, {}}), std::invalid_argument);
    EXPECT_THROW(calibrateStepTime(small, 100.0, large, 180.0, {{{0, 1.0, 1.0}}, {}}), std::invalid_argument)
        << "the other units have none";
}

// Four ranks on two cores: the calibration's units were timed four at a time, a step computes at
// least every rank's work over two, and a pipeline's idle stages do not hold their cores, so four
// stages cost about what four replicas do rather than their bubble's stretch.
TEST(StepTimeModel, RanksSharingCoresComputeNoFasterThanTheCoresDoTheirWork) {
    RunSpec small = gpt();
    small.model.layers = 4;
    small.train.global_batch = 8;
    small.parallel.dp = 4; // one micro-batch of 2 each
    const RunSpec large = withGlobalBatchTimes(small, 2);
    std::vector<MeasuredUnit> units;
    for (int u = 0; u < 6; ++u) units.push_back({u, 1.0, 2.0}); // 3 ms each, timed four at a time
    CalibrationProbe probe{units, {}, 2.0};
    const StepTimeModel shared = calibrateStepTime(small, 100.0, large, 180.0, probe);
    probe.cpu_slots = 0;
    const StepTimeModel devices = calibrateStepTime(small, 100.0, large, 180.0, probe);
    EXPECT_EQ(shared.unit_ranks, 4);
    const auto compute = [](const StepTimeModel& m, const RunSpec& s) { return m.predictMs(s) - m.commMs(stepCost(s)); };
    // Both come out as the calibration measured it (80 ms of compute).
    EXPECT_NEAR(compute(shared, small), 80.0, 1e-9);
    EXPECT_NEAR(compute(devices, small), 80.0, 1e-9);

    RunSpec pp = small;
    pp.parallel.dp = 1;
    pp.parallel.pp = 4; // 4 micro-batches; stages of 6, 3, 3, 6 ms (the embedding and the head ride along)
    const double bubble = stepCost(pp).bubble;
    ASSERT_GT(bubble, 0.4);
    // A device per rank: the slowest stage (6 ms) per micro-batch, stretched by the bubble.
    EXPECT_NEAR(compute(devices, pp), devices.unit_scale * 6.0 * 4 / (1 - bubble), 1e-9);
    // Shared cores: the units alone take half the time they did four at a time on two cores. The
    // stretched stage (3 ms, 4 micro-batches over 1 - bubble) is more than the work over the two
    // slots (4 micro-batches of 9 ms, 18 ms), and far less than with a device per rank.
    EXPECT_NEAR(compute(shared, pp), shared.unit_scale * 3.0 * 4 / (1 - bubble), 1e-9);
    EXPECT_GT(3.0 * 4 / (1 - bubble), 9.0 * 4 / 2);
    EXPECT_LT(compute(shared, pp), compute(devices, pp) / 1.9);
    // Two replicas of two stages: the work over the slots (2 x 2 micro-batches of 9 ms, 18 ms) is
    // more than the stretched stage (4.5 ms twice over 2/3, 13.5 ms): as much as four replicas.
    RunSpec dpPp = small;
    dpPp.parallel.dp = 2;
    dpPp.parallel.pp = 2;
    EXPECT_NEAR(compute(shared, dpPp), shared.unit_scale * 18.0, 1e-9);
    EXPECT_NEAR(compute(shared, dpPp), compute(shared, small), 1e-9);

    // No sharing where the ranks fit the cores, or with devices.
    MachineInfo two;
    two.cores = 2;
    RunSpec local = small;
    local.launch.threads_per_rank = 1;
    EXPECT_DOUBLE_EQ(sharedCpuSlots(local, two), 2.0);
    local.launch.threads_per_rank = 0;
    EXPECT_DOUBLE_EQ(sharedCpuSlots(local, two), 2.0) << "one thread each for four ranks";
    local.launch.device = Device::Cuda;
    EXPECT_EQ(sharedCpuSlots(local, two), 0);
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

// The run report: medians over the counted steps only, device samples only while those steps ran
// (unknown values left out, not averaged as -1), and pipeline bubbles of the counted steps next to
// the theory of the run's stored spec.

#include "core/store/RunReport.h"
#include "core/telemetry/PipelineBubbles.h"
#include "tests/core/store/TempDir.h"
#include "tests/support/PipelineSpans.h"

#include <gtest/gtest.h>

namespace parallax {
namespace {

using test::TempDir;

const char* kPipelineSpec = R"(name = "report"
[model]
kind = "gpt"
preset = "tiny"
[train]
steps = 6
global_batch = 16
micro_batch = 2
[parallel]
pp = 2
schedule = "1f1b"
[telemetry]
span_every = 2
)";

class RunReportTest : public ::testing::Test {
protected:
    TempDir dir;
    RunStore store{dir.file("parallax.db")};

    int64_t newRun(const std::string& spec) {
        NewRun r;
        r.name = "report";
        r.spec_toml = spec;
        return store.createRun(r);
    }

    // Step s ends at t = 100 + s and took 1 s (so it ran from 99 + s); tokens/s = 1000 * (s + 1).
    void addSteps(int64_t run, int count) {
        for (int s = 0; s < count; ++s) {
            StepEvent e;
            e.step = s;
            e.t = 100.0 + s;
            e.step_ms = 1000.0;
            e.tokens_per_s = 1000.0 * (s + 1);
            e.mfu = 0.1 * (s + 1);
            e.peak_mem = s == 1 ? 9e9 : 1e9;
            store.insertMetric(run, e);
        }
    }

    void addSample(int64_t run, int rank, double t, double util, double power) {
        DeviceEvent d;
        d.rank = rank;
        d.host = "gpu-host";
        d.device = rank;
        d.util = util;
        d.mem_used = 1e9 * (rank + 1) + t;
        d.mem_total = 80e9;
        d.power_w = power;
        d.t = t;
        store.insertDeviceSample(run, d);
    }
};

TEST_F(RunReportTest, CountsOnlyTheStepsFromTheFirstCountedOne) {
    const int64_t run = newRun(kPipelineSpec);
    addSteps(run, 6);
    const RunReport r = buildRunReport(store, run, 2);
    EXPECT_EQ(r.steps, 4);
    EXPECT_EQ(r.lastStep, 5);
    ASSERT_TRUE(r.tokensPerS.has_value());
    EXPECT_DOUBLE_EQ(*r.tokensPerS, 4500.0); // median of 3000, 4000, 5000, 6000
    EXPECT_DOUBLE_EQ(*r.mfu, 0.45);
    EXPECT_DOUBLE_EQ(*r.stepMs, 1000.0);
    EXPECT_DOUBLE_EQ(*r.peakMem, 1e9) << "step 1's peak is warm-up";
    EXPECT_DOUBLE_EQ(r.windowStart, 101.0);
    EXPECT_DOUBLE_EQ(r.windowEnd, 105.0);
}

TEST_F(RunReportTest, DevicesAreSummarizedOverTheCountedStepsAndUnknownValuesAreLeftOut) {
    const int64_t run = newRun(kPipelineSpec);
    addSteps(run, 6);
    addSample(run, 0, 100.5, 5.0, 100.0);  // warm-up: before the window
    addSample(run, 0, 102.0, 90.0, 500.0);
    addSample(run, 0, 104.0, 70.0, -1.0);  // power unknown
    addSample(run, 1, 103.0, 80.0, -1.0);
    addSample(run, 1, 106.0, 10.0, 300.0); // after the last step
    const RunReport r = buildRunReport(store, run, 2);
    ASSERT_EQ(r.devices.size(), 2u);
    const RunReport::Device& a = r.devices[0];
    EXPECT_EQ(a.rank, 0);
    EXPECT_EQ(a.host, "gpu-host");
    EXPECT_EQ(a.samples, 2);
    EXPECT_DOUBLE_EQ(*a.utilMean, 80.0);
    EXPECT_DOUBLE_EQ(*a.utilMin, 70.0);
    EXPECT_DOUBLE_EQ(*a.utilMax, 90.0);
    EXPECT_DOUBLE_EQ(*a.powerMean, 500.0) << "the unknown reading does not pull the mean down";
    EXPECT_DOUBLE_EQ(*a.memMax, 1e9 + 104.0);
    EXPECT_DOUBLE_EQ(*a.memTotal, 80e9);
    EXPECT_FALSE(a.tempMax.has_value());
    const RunReport::Device& b = r.devices[1];
    EXPECT_EQ(b.samples, 1);
    EXPECT_DOUBLE_EQ(*b.utilMean, 80.0);
    EXPECT_FALSE(b.powerMean.has_value());
}

TEST_F(RunReportTest, BubblesOfTheCountedStepsNextToTheSpecsTheory) {
    const int64_t run = newRun(kPipelineSpec);
    addSteps(run, 6);
    test::PipelineSpans schedule;
    schedule.stages = 2;
    schedule.microbatches = 8;
    for (int64_t step : {0, 2, 4}) store.insertSpans(run, schedule.make(step));
    const RunReport r = buildRunReport(store, run, 2);
    ASSERT_EQ(r.bubbles.size(), 2u);
    EXPECT_EQ(r.bubbles[0].step, 2);
    EXPECT_EQ(r.bubbles[1].step, 4);
    const PipelineBubbles expected = PipelineBubbles::measure(schedule.make(2));
    EXPECT_NEAR(r.bubbles[0].overall, expected.overall, 1e-12);
    ASSERT_EQ(r.bubbles[0].stages.size(), 2u);
    ASSERT_TRUE(r.bubbleMedian.has_value());
    EXPECT_NEAR(*r.bubbleMedian, expected.overall, 1e-12);
    ASSERT_EQ(r.stageMedians.size(), 2u);
    ASSERT_TRUE(r.bubbleTheory.has_value());
    EXPECT_NEAR(*r.bubbleTheory, 1.0 / 9.0, 1e-12);
    EXPECT_EQ(r.theoryBasis, "p = 2, m = 8, 1f1b");
    // Equal passes and free communication: the measured bubble is the theory.
    EXPECT_NEAR(*r.bubbleMedian, 1.0 / 9.0, 1e-6);
}

TEST_F(RunReportTest, NoStepsNoSpecAndUnknownRunAreReportedNotGuessed) {
    const int64_t run = newRun("");
    const RunReport r = buildRunReport(store, run, 0);
    EXPECT_EQ(r.steps, 0);
    EXPECT_FALSE(r.tokensPerS.has_value());
    EXPECT_TRUE(r.devices.empty());
    EXPECT_FALSE(r.bubbleTheory.has_value());
    EXPECT_EQ(r.theoryBasis, "the run has no spec stored");
    EXPECT_THROW(buildRunReport(store, run + 100, 0), StoreError);
}

} // namespace
} // namespace parallax

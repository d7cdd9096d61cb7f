// The spans a pipeline records are complete and in schedule order, and the bubble they measure is
// the schedule's.

#include "core/telemetry/PipelineBubbles.h"
#include "tests/trainer/support/SpecText.h"
#include "tests/trainer/support/WorkerRun.h"
#include "trainer/parallel/PipelineSchedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

using namespace parallax;
using namespace parallax::testing;

namespace {

// Each rank's F, B and W spans of one step, by start: the engine's order of actions.
std::vector<PipelineAction> recordedOrder(const std::vector<SpanEvent>& spans, int rank) {
    std::vector<SpanEvent> mine;
    for (const SpanEvent& s : spans)
        if (s.rank == rank && PipelineBubbles::isCompute(s.kind)) mine.push_back(s);
    std::sort(mine.begin(), mine.end(), [](const SpanEvent& a, const SpanEvent& b) { return a.start < b.start; });
    std::vector<PipelineAction> out;
    for (const SpanEvent& s : mine) {
        const auto kind = s.kind == "F"   ? PipelineAction::Kind::Forward
                          : s.kind == "B" ? PipelineAction::Kind::Backward
                                          : PipelineAction::Kind::WeightGrad;
        out.push_back({kind, 0, s.microbatch});
    }
    return out;
}

// Every span of every step, in the order 1f1b allows, and a bubble measured from them for every
// stage. How close the measured bubble comes to theory is timed (four ranks share two cores here),
// so it lives in bench/pipeline (bench_pipeline_bubbles), not here.
TEST(PipelineSpans, OneFOneBOnFourStagesRecordsEverySpanInScheduleOrder) {
    const TinySpec spec = bubbleComparisonSpec("1f1b", 3, 4);
    TempDir tmp;
    const WorkerRun run = runWorker(spec.toToml(), 4, tmp.path() + "/run");
    ASSERT_EQ(run.exitCode, 0) << run.output;
    const auto steps = run.spansByStep();
    ASSERT_EQ(steps.size(), 3u);
    for (const auto& [step, spans] : steps) {
        const auto problems = PipelineBubbles::checkOrder(spans, 8, 1);
        EXPECT_TRUE(problems.empty()) << "step " << step << ": " << problems.front();
        std::map<int, int> forwards, backwards; // by stage
        for (const SpanEvent& s : spans) {
            forwards[s.stage] += s.kind == "F";
            backwards[s.stage] += s.kind == "B";
        }
        for (int stage = 0; stage < 4; ++stage) {
            EXPECT_EQ(forwards[stage], 8) << "step " << step << " stage " << stage;
            EXPECT_EQ(backwards[stage], 8) << "step " << step << " stage " << stage;
            EXPECT_EQ(recordedOrder(spans, stage), pipelineSchedule(Schedule::OneFOneB, 4, stage, 8, 1))
                << "step " << step << " stage " << stage;
        }
        const PipelineBubbles b = PipelineBubbles::measure(spans);
        ASSERT_EQ(b.stages.size(), 4u);
        for (const PipelineBubbles::Stage& st : b.stages) {
            EXPECT_GT(st.busy, 0) << "step " << step << " stage " << st.stage;
            EXPECT_GT(st.fraction, 0) << "step " << step << " stage " << st.stage; // the warm-up waits
            EXPECT_LT(st.fraction, 1) << "step " << step << " stage " << st.stage;
        }
    }
    EXPECT_NEAR(PipelineBubbles::theoretical(4, 8, Schedule::OneFOneB), 3.0 / 11.0, 1e-12);
}

TEST(PipelineSpans, ZeroBubbleRecordsOneWeightPassPerMicroBatchAfterItsBackward) {
    TinySpec spec;
    spec.kind = "gpt";
    spec.layers = 4;
    spec.steps = 2;
    spec.globalBatch = 8;
    spec.microBatch = 2; // 4 micro-batches per step
    spec.pp = 2;
    spec.schedule = "zb1";
    spec.spanEvery = 1;
    TempDir tmp;
    const WorkerRun run = runWorker(spec.toToml(), 2, tmp.path() + "/run");
    ASSERT_EQ(run.exitCode, 0) << run.output;
    const auto steps = run.spansByStep();
    ASSERT_EQ(steps.size(), 2u);
    for (const auto& [step, spans] : steps) {
        const auto problems = PipelineBubbles::checkOrder(spans, 4, 1);
        EXPECT_TRUE(problems.empty()) << "step " << step << ": " << problems.front();
        std::map<std::pair<int, int>, int> weights; // (stage, micro-batch)
        for (const SpanEvent& s : spans)
            if (s.kind == "W") ++weights[{s.stage, s.microbatch}];
        EXPECT_EQ(weights.size(), 2u * 4u) << "step " << step;
        for (const auto& [key, n] : weights)
            EXPECT_EQ(n, 1) << "step " << step << " stage " << key.first << " micro-batch " << key.second;
        // Each rank ran the schedule's order (checkOrder above only sees that each W follows its B).
        for (int stage = 0; stage < 2; ++stage)
            EXPECT_EQ(recordedOrder(spans, stage), pipelineSchedule(Schedule::ZeroBubble, 2, stage, 4, 1))
                << "step " << step << " stage " << stage;
    }
}

// qwen_image, whose chunks hand on three tensors (text, image, timestep).
class InterleavedSpans : public ::testing::TestWithParam<std::string> {};

TEST_P(InterleavedSpans, RecordEveryChunkInOrder) {
    TinySpec spec;
    spec.kind = GetParam();
    spec.layers = 4;
    spec.steps = 2;
    spec.pp = 2;
    spec.schedule = "interleaved";
    spec.virtualStages = 2;
    spec.spanEvery = 1;
    TempDir tmp;
    const WorkerRun run = runWorker(spec.toToml(), 2, tmp.path() + "/run");
    ASSERT_EQ(run.exitCode, 0) << run.output;
    for (const auto& [step, spans] : run.spansByStep()) {
        const auto problems = PipelineBubbles::checkOrder(spans, 4, 2);
        EXPECT_TRUE(problems.empty()) << "step " << step << ": " << problems.front();
        EXPECT_EQ(std::count_if(spans.begin(), spans.end(), [](const SpanEvent& s) { return s.kind == "F"; }), 2 * 4 * 2);
    }
}

INSTANTIATE_TEST_SUITE_P(Kinds, InterleavedSpans, ::testing::Values("qwen_image"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

} // namespace

// The spans a pipeline records are complete and in schedule order, and the bubble they measure is
// the schedule's.

#include "core/telemetry/PipelineBubbles.h"
#include "tests/trainer/support/SpecText.h"
#include "tests/trainer/support/WorkerRun.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

using namespace parallax;
using namespace parallax::testing;

namespace {

std::map<int64_t, std::vector<SpanEvent>> byStep(const std::vector<SpanEvent>& spans) {
    std::map<int64_t, std::vector<SpanEvent>> out;
    for (const SpanEvent& s : spans) out[s.step].push_back(s);
    return out;
}

TEST(PipelineSpans, OneFOneBOnFourStagesMatchesTheTheoreticalBubble) {
    TinySpec spec;
    spec.kind = "gpt";
    spec.layers = 8; // two equal blocks per stage
    spec.extraModel = "dim = 128\nffn = 512\n";
    spec.steps = 4;
    spec.globalBatch = 32;
    spec.microBatch = 4; // 8 micro-batches per step
    spec.pp = 4;
    spec.schedule = "1f1b";
    spec.spanEvery = 1;
    TempDir tmp;
    const WorkerRun run = runWorker(spec.toToml(), 4, tmp.path() + "/run");
    ASSERT_EQ(run.exitCode, 0) << run.output;
    const auto steps = byStep(run.spans);
    ASSERT_EQ(steps.size(), 4u);

    std::vector<double> measured;
    for (const auto& [step, spans] : steps) {
        const auto problems = PipelineBubbles::checkOrder(spans, 8, 1);
        EXPECT_TRUE(problems.empty()) << "step " << step << ": " << problems.front();
        int forwards = 0, backwards = 0;
        for (const SpanEvent& s : spans) {
            forwards += s.kind == "F";
            backwards += s.kind == "B";
        }
        EXPECT_EQ(forwards, 4 * 8);
        EXPECT_EQ(backwards, 4 * 8);
        if (step == 0) continue; // the first step also warms up allocators and caches
        const PipelineBubbles b = PipelineBubbles::measure(spans);
        ASSERT_EQ(b.stages.size(), 4u);
        measured.push_back(b.overall);
    }
    std::sort(measured.begin(), measured.end());
    const double median = measured[measured.size() / 2];
    const double theory = PipelineBubbles::theoretical(4, 8, Schedule::OneFOneB);
    EXPECT_NEAR(theory, 3.0 / 11.0, 1e-12);
    EXPECT_NEAR(median, theory, 0.10) << "measured bubble " << median << " vs theory " << theory;
}

TEST(PipelineSpans, InterleavedRecordsEveryChunkInOrder) {
    TinySpec spec;
    spec.kind = "mmdit";
    spec.layers = 4;
    spec.steps = 2;
    spec.pp = 2;
    spec.schedule = "interleaved";
    spec.virtualStages = 2;
    spec.spanEvery = 1;
    TempDir tmp;
    const WorkerRun run = runWorker(spec.toToml(), 2, tmp.path() + "/run");
    ASSERT_EQ(run.exitCode, 0) << run.output;
    for (const auto& [step, spans] : byStep(run.spans)) {
        const auto problems = PipelineBubbles::checkOrder(spans, 4, 2);
        EXPECT_TRUE(problems.empty()) << "step " << step << ": " << problems.front();
        EXPECT_EQ(std::count_if(spans.begin(), spans.end(), [](const SpanEvent& s) { return s.kind == "F"; }), 2 * 4 * 2);
    }
}

} // namespace

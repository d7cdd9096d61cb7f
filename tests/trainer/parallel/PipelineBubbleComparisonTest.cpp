// zb1 on the same pp = 2 run as 1f1b, by the order and the work of its spans. Which schedule idles
// less is timed, so it lives in bench/pipeline (bench_pipeline_bubbles), not here.

#include "core/telemetry/PipelineBubbles.h"
#include "tests/trainer/support/SpecText.h"
#include "tests/trainer/support/WorkerRun.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

using namespace parallax;
using namespace parallax::testing;

namespace {

// The same pp = 2 model with 8 micro-batches under 1f1b and zb1: every span in the order the
// schedule allows; zb1 runs one W pass per micro-batch and stage, each on stage 0 between its own
// backward and the next micro-batch's, where 1f1b waits for the next gradient; and a W pass does a
// good share of a backward's work, not an empty queue's microseconds.
TEST(PipelineBubbleComparison, ZeroBubbleFillsStageZerosGapsWithWeightPasses) {
    const int m = 8;
    for (const char* schedule : {"1f1b", "zb1"}) {
        const TinySpec spec = bubbleComparisonSpec(schedule, 6);
        TempDir tmp;
        const WorkerRun run = runWorker(spec.toToml(), 2, tmp.path() + "/run");
        ASSERT_EQ(run.exitCode, 0) << run.output;
        const bool zb = std::string(schedule) == "zb1";
        for (const auto& [step, spans] : run.spansByStep()) {
            const auto problems = PipelineBubbles::checkOrder(spans, m, 1);
            EXPECT_TRUE(problems.empty()) << schedule << " step " << step << ": " << problems.front();
            std::map<std::pair<std::string, int>, const SpanEvent*> stage0; // (kind, micro-batch)
            std::vector<double> backward, weight;
            for (const SpanEvent& s : spans) {
                if (s.stage == 0) stage0[{s.kind, s.microbatch}] = &s;
                if (s.kind == "B") backward.push_back(s.end - s.start);
                if (s.kind == "W") weight.push_back(s.end - s.start);
            }
            EXPECT_EQ(weight.size(), zb ? 2u * m : 0u) << schedule << " step " << step;
            for (int i = 0; zb && i + 1 < m; ++i) {
                const SpanEvent* w = stage0[{"W", i}];
                const SpanEvent* b = stage0[{"B", i}];
                const SpanEvent* nextB = stage0[{"B", i + 1}];
                ASSERT_TRUE(w && b && nextB) << "step " << step << " micro-batch " << i;
                EXPECT_GE(w->start, b->end) << "step " << step << " W" << i;
                EXPECT_LE(w->end, nextB->start) << "step " << step << " W" << i;
            }
            if (zb) { // the W passes compute the Linear weights' gradients
                std::sort(backward.begin(), backward.end());
                std::sort(weight.begin(), weight.end());
                EXPECT_GT(weight[weight.size() / 2], 0.1 * backward[backward.size() / 2]) << "step " << step;
            }
        }
        EXPECT_EQ(run.spansByStep().size(), 6u) << schedule;
    }
}

} // namespace

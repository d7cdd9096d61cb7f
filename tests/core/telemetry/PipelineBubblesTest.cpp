#include "core/spec/Estimates.h"
#include "core/telemetry/PipelineBubbles.h"
#include "core/telemetry/SpanKind.h"
#include "tests/support/PipelineSpans.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

using namespace parallax;

namespace {

// Epoch-sized times with dyadic durations: every sum below is exact in a double, so the measured
// fractions can be compared with the formula exactly.
constexpr double kT0 = 1.7e9;
constexpr double kUnit = 1.0 / 1024.0;

// A schedule run with every pass taking one kUnit and free communication (tests/support).
std::vector<SpanEvent> simulate(Schedule schedule, int p, int m, int v = 1, int replicas = 1,
                                int64_t step = 10) {
    test::PipelineSpans run;
    run.schedule = schedule;
    run.stages = p;
    run.microbatches = m;
    run.chunks = v;
    run.replicas = replicas;
    run.passSeconds = kUnit;
    run.t0 = kT0;
    return run.make(step);
}

SpanEvent span(int rank, int stage, int micro, const std::string& kind, double start, double end, int64_t step = 3) {
    SpanEvent e;
    e.rank = rank;
    e.stage = stage;
    e.step = step;
    e.microbatch = micro;
    e.kind = kind;
    e.start = kT0 + start * kUnit;
    e.end = kT0 + end * kUnit;
    return e;
}

bool mentions(const std::vector<std::string>& problems, const std::string& part) {
    return std::any_of(problems.begin(), problems.end(),
                       [&](const std::string& p) { return p.find(part) != std::string::npos; });
}

std::string joined(const std::vector<std::string>& problems) {
    std::string out;
    for (const std::string& p : problems) out += p + "\n";
    return out;
}

} // namespace

// The one table of pipeline span kinds: every name reads back as its kind, the passes are compute
// and the neighbour waits are communication, and other spans have no kind.
TEST(SpanKinds, NamesRoundTripAndSayWhatTheSpanIs) {
    for (size_t i = 0; i < kSpanKindCount; ++i) {
        const SpanKind kind = static_cast<SpanKind>(i);
        EXPECT_EQ(spanKindNamed(spanKindName(kind)), kind) << spanKindName(kind);
        EXPECT_EQ(PipelineBubbles::isCompute(spanKindName(kind)), spanKindInfo(kind).compute);
        EXPECT_EQ(PipelineBubbles::isPipelineComm(spanKindName(kind)), spanKindInfo(kind).pipelineComm);
        EXPECT_NE(spanKindInfo(kind).compute, spanKindInfo(kind).pipelineComm) << spanKindName(kind);
    }
    EXPECT_EQ(std::string(spanKindName(SpanKind::Weight)), "W");
    EXPECT_EQ(spanKindNamed("optimizer"), std::nullopt);
    EXPECT_FALSE(PipelineBubbles::isCompute("allreduce"));
}

TEST(PipelineBubbles, PerfectOneFOneBMatchesTheFormulaExactly) {
    const std::vector<SpanEvent> spans = simulate(Schedule::OneFOneB, 4, 8);
    const PipelineBubbles b = PipelineBubbles::measure(spans);
    const double expected = 3.0 / 11.0;
    ASSERT_EQ(b.stages.size(), 4u);
    EXPECT_EQ(b.step, 10);
    // (m + p - 1) * (tF + tB) = 11 * 2 units.
    EXPECT_DOUBLE_EQ(b.window(), 22 * kUnit);
    for (const PipelineBubbles::Stage& s : b.stages) {
        ASSERT_EQ(s.ranks.size(), 1u);
        EXPECT_DOUBLE_EQ(s.busy, 16 * kUnit) << "stage " << s.stage;
        EXPECT_DOUBLE_EQ(s.fraction, expected) << "stage " << s.stage;
    }
    EXPECT_DOUBLE_EQ(b.overall, expected);
    EXPECT_DOUBLE_EQ(PipelineBubbles::theoretical(4, 8, Schedule::OneFOneB), expected);
}

TEST(PipelineBubbles, PerfectGPipeAndInterleavedMatchTheirFormulas) {
    const PipelineBubbles gpipe = PipelineBubbles::measure(simulate(Schedule::GPipe, 4, 8));
    EXPECT_DOUBLE_EQ(gpipe.overall, PipelineBubbles::theoretical(4, 8, Schedule::GPipe));
    for (int v : {2, 4}) {
        const PipelineBubbles inter = PipelineBubbles::measure(simulate(Schedule::Interleaved, 4, 8, v));
        EXPECT_NEAR(inter.overall, PipelineBubbles::theoretical(4, 8, Schedule::Interleaved, v), 1e-12) << "v = " << v;
        for (const PipelineBubbles::Stage& s : inter.stages)
            EXPECT_NEAR(s.fraction, 3.0 / (8.0 * v + 3.0), 1e-12) << "v = " << v << " stage " << s.stage;
    }
}

TEST(PipelineBubbles, BlockingReceivesAreIdleAndReportedApart) {
    std::vector<SpanEvent> spans = simulate(Schedule::OneFOneB, 4, 8);
    const PipelineBubbles withRecv = PipelineBubbles::measure(spans);
    spans.erase(std::remove_if(spans.begin(), spans.end(), [](const SpanEvent& e) { return e.kind == "recv"; }),
                spans.end());
    const PipelineBubbles without = PipelineBubbles::measure(spans);
    EXPECT_DOUBLE_EQ(withRecv.overall, without.overall);
    // The first stage runs from the window's start to its end, so all its idle time is spent
    // waiting for gradients; the last stage waits three units for its first input and is idle,
    // not blocked, after its last backward.
    EXPECT_DOUBLE_EQ(withRecv.stages[0].blocked, withRecv.window() - withRecv.stages[0].busy);
    EXPECT_DOUBLE_EQ(withRecv.stages[3].blocked, 3 * kUnit);
    EXPECT_DOUBLE_EQ(without.stages[3].blocked, 0.0);
}

TEST(PipelineBubbles, GapsAddIdleTime) {
    std::vector<SpanEvent> spans = simulate(Schedule::OneFOneB, 4, 8);
    const PipelineBubbles perfect = PipelineBubbles::measure(spans);
    // A 5-unit stall of the whole pipeline in the middle of the step.
    const double cut = kT0 + 11 * kUnit;
    for (SpanEvent& e : spans) {
        if (e.start >= cut) {
            e.start += 5 * kUnit;
            e.end += 5 * kUnit;
        }
    }
    const PipelineBubbles stalled = PipelineBubbles::measure(spans);
    EXPECT_DOUBLE_EQ(stalled.window(), perfect.window() + 5 * kUnit);
    for (const PipelineBubbles::Stage& s : stalled.stages) {
        EXPECT_DOUBLE_EQ(s.busy, 16 * kUnit);
        EXPECT_DOUBLE_EQ(s.fraction, 1.0 - 16.0 / 27.0);
    }
    EXPECT_GT(stalled.overall, perfect.overall);
}

TEST(PipelineBubbles, OneStageLateIsIdleAgainstTheCommonWindow) {
    // Stage 0 works 0..4; stage 1 only 2..4: its first two units are idle.
    const std::vector<SpanEvent> spans = {span(0, 0, 0, "F", 0, 2), span(0, 0, 0, "B", 2, 4),
                                          span(1, 1, 0, "F", 2, 3), span(1, 1, 0, "B", 3, 4)};
    const PipelineBubbles b = PipelineBubbles::measure(spans);
    ASSERT_EQ(b.stages.size(), 2u);
    EXPECT_DOUBLE_EQ(b.window(), 4 * kUnit);
    EXPECT_DOUBLE_EQ(b.stages[0].fraction, 0.0);
    EXPECT_DOUBLE_EQ(b.stages[1].fraction, 0.5);
    EXPECT_DOUBLE_EQ(b.overall, 0.25);
}

TEST(PipelineBubbles, OverlappingSpansAreCountedOnce) {
    const std::vector<SpanEvent> spans = {
        span(0, 0, 0, "F", 0, 2), span(0, 0, 1, "F", 1, 3), // overlap 1..2
        span(0, 0, 0, "B", 3, 5), span(0, 0, 0, "B", 3, 5), // the same span twice
        span(0, 0, 1, "B", 4, 4.5),                          // inside another
        span(0, 0, 1, "recv", 5, 8),                         // extends the window, not busy
    };
    const PipelineBubbles b = PipelineBubbles::measure(spans);
    ASSERT_EQ(b.stages.size(), 1u);
    EXPECT_DOUBLE_EQ(b.stages[0].busy, 5 * kUnit);
    EXPECT_DOUBLE_EQ(b.stages[0].blocked, 3 * kUnit);
    EXPECT_DOUBLE_EQ(b.window(), 8 * kUnit);
    EXPECT_DOUBLE_EQ(b.overall, 1.0 - 5.0 / 8.0);
    EXPECT_EQ(b.stages[0].ranks[0].computeSpans, 5);
}

TEST(PipelineBubbles, ReceivesOverlappingComputeAreNotBlockedTime) {
    const std::vector<SpanEvent> spans = {span(0, 0, 0, "F", 0, 4), span(0, 0, 1, "recv", 2, 6),
                                          span(0, 0, 0, "B", 6, 7)};
    const PipelineBubbles b = PipelineBubbles::measure(spans);
    EXPECT_DOUBLE_EQ(b.stages[0].blocked, 2 * kUnit);
    EXPECT_DOUBLE_EQ(b.stages[0].busy, 5 * kUnit);
}

TEST(PipelineBubbles, ReplicasOfAStageAreAveragedAndTheirSpreadKept) {
    // Two tensor-parallel ranks of stage 0; rank 1 computes half as long.
    const std::vector<SpanEvent> spans = {span(0, 0, 0, "F", 0, 4), span(0, 0, 0, "B", 4, 8),
                                          span(1, 0, 0, "F", 0, 2), span(1, 0, 0, "B", 4, 6),
                                          span(2, 1, 0, "F", 0, 8)};
    const PipelineBubbles b = PipelineBubbles::measure(spans);
    ASSERT_EQ(b.stages.size(), 2u);
    EXPECT_EQ(b.rankCount(), 3);
    const PipelineBubbles::Stage& s0 = b.stages[0];
    ASSERT_EQ(s0.ranks.size(), 2u);
    EXPECT_EQ(s0.ranks[0].rank, 0);
    EXPECT_EQ(s0.ranks[1].rank, 1);
    EXPECT_DOUBLE_EQ(s0.ranks[0].fraction, 0.0);
    EXPECT_DOUBLE_EQ(s0.ranks[1].fraction, 0.5);
    EXPECT_DOUBLE_EQ(s0.fraction, 0.25);
    EXPECT_DOUBLE_EQ(s0.minFraction, 0.0);
    EXPECT_DOUBLE_EQ(s0.maxFraction, 0.5);
    EXPECT_DOUBLE_EQ(s0.busy, 6 * kUnit);
    EXPECT_DOUBLE_EQ(b.overall, (0.25 + 0.0) / 2);
}

TEST(PipelineBubbles, ReplicatedPerfectScheduleKeepsTheFormula) {
    const PipelineBubbles b = PipelineBubbles::measure(simulate(Schedule::OneFOneB, 4, 8, 1, 2));
    EXPECT_EQ(b.rankCount(), 8);
    EXPECT_DOUBLE_EQ(b.overall, 3.0 / 11.0);
    for (const PipelineBubbles::Stage& s : b.stages) EXPECT_DOUBLE_EQ(s.minFraction, s.maxFraction);
}

TEST(PipelineBubbles, OtherSpanKindsStayOutOfTheWindow) {
    const std::vector<SpanEvent> spans = {span(0, 0, 0, "F", 0, 1), span(0, 0, 0, "B", 1, 2),
                                          span(0, 0, -1, "optimizer", 2, 10), span(0, 0, -1, "allreduce", -5, 0)};
    const PipelineBubbles b = PipelineBubbles::measure(spans);
    EXPECT_DOUBLE_EQ(b.window(), 2 * kUnit);
    EXPECT_DOUBLE_EQ(b.overall, 0.0);
}

TEST(PipelineBubbles, EmptyAndMixedSteps) {
    EXPECT_TRUE(PipelineBubbles::measure({}).empty());
    EXPECT_TRUE(PipelineBubbles::measure({span(0, 0, -1, "optimizer", 0, 1)}).empty());
    try {
        PipelineBubbles::measure({span(0, 0, 0, "F", 0, 1, 3), span(0, 0, 0, "B", 1, 2, 4)});
        FAIL() << "spans of two steps were accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("steps 3 and 4"), std::string::npos) << e.what();
    }
}

TEST(PipelineBubbles, TheoreticalValues) {
    EXPECT_DOUBLE_EQ(PipelineBubbles::theoretical(4, 8, Schedule::GPipe), 3.0 / 11.0);
    EXPECT_DOUBLE_EQ(PipelineBubbles::theoretical(4, 8, Schedule::Interleaved, 2), 3.0 / 19.0);
    // The chunk count only matters to the interleaved schedule.
    EXPECT_DOUBLE_EQ(PipelineBubbles::theoretical(4, 8, Schedule::OneFOneB, 2), 3.0 / 11.0);
    EXPECT_DOUBLE_EQ(PipelineBubbles::theoretical(1, 8, Schedule::OneFOneB), 0.0);
    EXPECT_DOUBLE_EQ(PipelineBubbles::theoretical(64, 64, Schedule::OneFOneB), 63.0 / 127.0);
    // The spec's estimate and the measurement's reference are the same formula.
    // zb1: p - 1 idle units beside 3m units of F, B and W.
    EXPECT_DOUBLE_EQ(PipelineBubbles::theoretical(2, 8, Schedule::ZeroBubble), 1.0 / 25.0);
    EXPECT_DOUBLE_EQ(PipelineBubbles::theoretical(4, 8, Schedule::ZeroBubble), 3.0 / 27.0);
    EXPECT_DOUBLE_EQ(PipelineBubbles::theoretical(1, 8, Schedule::ZeroBubble), 0.0);
    for (const Schedule schedule : {Schedule::GPipe, Schedule::OneFOneB, Schedule::Interleaved, Schedule::ZeroBubble})
        for (int p : {1, 2, 3, 8})
            for (int m : {1, 4, 16})
                for (int v : {1, 2, 3})
                    EXPECT_DOUBLE_EQ(PipelineBubbles::theoretical(p, m, schedule, v), pipelineBubble(p, m, schedule, v))
                        << choiceName(schedule) << " p " << p << " m " << m << " v " << v;
}

TEST(PipelineBubbles, TheoreticalRejectsWhatItCannotJudge) {
    try {
        PipelineBubbles::theoretical(4, 8, Choice<Schedule>::named("zigzag"));
        FAIL();
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("parallel.schedule"), std::string::npos) << e.what();
    }
    try {
        PipelineBubbles::theoretical(4, 0, Schedule::OneFOneB);
        FAIL();
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("train.global_batch"), std::string::npos) << e.what();
    }
    EXPECT_THROW(PipelineBubbles::theoretical(4, 8, Schedule::Interleaved, 0), std::invalid_argument);
}

TEST(PipelineBubblesOrder, ScheduledTimelinesHaveNoProblems) {
    EXPECT_TRUE(PipelineBubbles::checkOrder(simulate(Schedule::GPipe, 4, 8), 8, 1).empty());
    EXPECT_TRUE(PipelineBubbles::checkOrder(simulate(Schedule::OneFOneB, 4, 8, 1, 2), 8, 1).empty());
    const std::vector<std::string> inter = PipelineBubbles::checkOrder(simulate(Schedule::Interleaved, 4, 8, 2), 8, 2);
    EXPECT_TRUE(inter.empty()) << joined(inter);
    // Several steps at once.
    std::vector<SpanEvent> two = simulate(Schedule::OneFOneB, 2, 4, 1, 1, 10);
    const std::vector<SpanEvent> later = simulate(Schedule::OneFOneB, 2, 4, 1, 1, 20);
    two.insert(two.end(), later.begin(), later.end());
    EXPECT_TRUE(PipelineBubbles::checkOrder(two, 4).empty());
}

TEST(PipelineBubblesOrder, BackwardBeforeForwardIsNamed) {
    const std::vector<SpanEvent> spans = {span(2, 1, 5, "B", 0, 1), span(2, 1, 5, "F", 1, 2)};
    const std::vector<std::string> problems = PipelineBubbles::checkOrder(spans);
    ASSERT_EQ(problems.size(), 1u) << joined(problems);
    EXPECT_NE(problems[0].find("step 3 rank 2 stage 1 micro-batch 5"), std::string::npos) << problems[0];
    EXPECT_NE(problems[0].find("before its forward ends"), std::string::npos) << problems[0];
}

TEST(PipelineBubblesOrder, ABackwardBetweenTwoChunksForwardsIsOutOfOrder) {
    const std::vector<SpanEvent> spans = {span(0, 0, 1, "F", 0, 1), span(0, 0, 1, "B", 1, 2),
                                          span(0, 0, 1, "F", 2, 3), span(0, 0, 1, "B", 3, 4)};
    EXPECT_TRUE(mentions(PipelineBubbles::checkOrder(spans, 0, 2), "before its forward ends"));
}

TEST(PipelineBubblesOrder, CountsMustMatch) {
    std::vector<SpanEvent> spans = simulate(Schedule::OneFOneB, 4, 8);
    // Drop one backward of stage 2, micro-batch 3.
    spans.erase(std::find_if(spans.begin(), spans.end(), [](const SpanEvent& e) {
        return e.stage == 2 && e.microbatch == 3 && e.kind == "B";
    }));
    const std::vector<std::string> problems = PipelineBubbles::checkOrder(spans, 8, 1);
    ASSERT_EQ(problems.size(), 1u) << joined(problems);
    EXPECT_NE(problems[0].find("rank 2 stage 2 micro-batch 3: 1 forward(s) but 0 backward(s)"), std::string::npos)
        << problems[0];
}

TEST(PipelineBubblesOrder, MissingMicroBatchesAndChunks) {
    std::vector<SpanEvent> spans = simulate(Schedule::OneFOneB, 2, 4);
    spans.erase(std::remove_if(spans.begin(), spans.end(),
                               [](const SpanEvent& e) { return e.stage == 1 && e.microbatch == 2; }),
                spans.end());
    EXPECT_TRUE(PipelineBubbles::checkOrder(spans).empty());
    const std::vector<std::string> problems = PipelineBubbles::checkOrder(spans, 4);
    ASSERT_EQ(problems.size(), 1u) << joined(problems);
    EXPECT_NE(problems[0].find("stage 1: no forward or backward of micro-batch 2"), std::string::npos) << problems[0];
    // One chunk recorded where the interleaved schedule runs two.
    EXPECT_TRUE(mentions(PipelineBubbles::checkOrder(simulate(Schedule::OneFOneB, 2, 4), 4, 2), "expected 2 (one per model chunk)"));
    EXPECT_TRUE(mentions(PipelineBubbles::checkOrder({span(0, 0, 9, "F", 0, 1), span(0, 0, 9, "B", 1, 2)}, 4),
                         "outside 0..3"));
}

TEST(PipelineBubblesOrder, WeightPassesFollowTheirBackward) {
    // Stage 0 of two under zb1: F0 F1 B0 W0 F2 B1 W1 B2 W2 (trainer/parallel/PipelineSchedule).
    std::vector<SpanEvent> spans = {span(0, 0, 0, "F", 0, 1), span(0, 0, 1, "F", 1, 2), span(0, 0, 0, "B", 3, 4),
                                    span(0, 0, 0, "W", 4, 5), span(0, 0, 2, "F", 5, 6), span(0, 0, 1, "B", 6, 7),
                                    span(0, 0, 1, "W", 7, 8), span(0, 0, 2, "B", 9, 10), span(0, 0, 2, "W", 10, 11)};
    EXPECT_TRUE(PipelineBubbles::checkOrder(spans, 3, 1).empty()) << joined(PipelineBubbles::checkOrder(spans, 3, 1));
    // W counts as compute: the stage idles only at 2-3 and 8-9.
    EXPECT_DOUBLE_EQ(PipelineBubbles::measure(spans).overall, 2.0 / 11.0);

    std::vector<SpanEvent> early = spans;
    early[3] = span(0, 0, 0, "W", 2, 3); // W0 before B0
    std::vector<std::string> problems = PipelineBubbles::checkOrder(early, 3, 1);
    ASSERT_EQ(problems.size(), 1u) << joined(problems);
    EXPECT_NE(problems[0].find("stage 0 micro-batch 0: a weight-gradient pass (W) starts at +1.953 ms, before its "
                               "backward ends at +3.906 ms"),
              std::string::npos)
        << problems[0];

    std::vector<SpanEvent> missing = spans;
    missing.erase(missing.begin() + 6); // W1
    problems = PipelineBubbles::checkOrder(missing, 3, 1);
    ASSERT_EQ(problems.size(), 1u) << joined(problems);
    EXPECT_NE(problems[0].find("micro-batch 1: 1 backward(s) but 0 weight-gradient pass(es) (W)"), std::string::npos)
        << problems[0];

    std::vector<SpanEvent> twice = spans;
    twice.push_back(span(0, 0, 2, "W", 11, 12));
    EXPECT_TRUE(mentions(PipelineBubbles::checkOrder(twice, 3, 1), "micro-batch 2: 1 backward(s) but 2 weight-gradient"));

    // A W outside the micro-batches, and schedules without W passes ask for none.
    std::vector<SpanEvent> outside = spans;
    outside.push_back(span(0, 0, 7, "W", 11, 12));
    EXPECT_TRUE(mentions(PipelineBubbles::checkOrder(outside, 3, 1), "W of micro-batch 7, outside 0..2"));
    EXPECT_TRUE(PipelineBubbles::checkOrder(simulate(Schedule::OneFOneB, 2, 4), 4, 1).empty());
}

TEST(PipelineBubblesOrder, ASpanEndingBeforeItStarts) {
    const std::vector<std::string> problems =
        PipelineBubbles::checkOrder({span(0, 0, 0, "F", 2, 1), span(0, 0, 0, "B", 2, 3), span(0, 0, 0, "recv", 5, 4)});
    EXPECT_EQ(problems.size(), 2u) << joined(problems);
    EXPECT_TRUE(mentions(problems, "F of micro-batch 0 ends at"));
    EXPECT_TRUE(mentions(problems, "recv of micro-batch 0 ends at"));
}

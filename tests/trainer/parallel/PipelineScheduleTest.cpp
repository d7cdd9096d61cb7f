#include "trainer/parallel/PipelineSchedule.h"
#include "core/spec/Estimates.h"
#include "core/spec/StagePartition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>

using namespace parallax;
using Kind = PipelineAction::Kind;

namespace {

// Every (chunk, micro-batch) has one forward then one backward; at most `limit` in flight.
void expectWellFormed(const std::vector<PipelineAction>& actions, int chunks, int micro, int limit) {
    std::map<std::pair<int, int>, int> state; // 0 none, 1 forward done, 2 backward done
    int inFlight = 0, peak = 0;
    for (const auto& a : actions) {
        auto& s = state[{a.chunk, a.microbatch}];
        if (a.kind == Kind::Forward) {
            EXPECT_EQ(s, 0);
            s = 1;
            peak = std::max(peak, ++inFlight);
        } else {
            EXPECT_EQ(s, 1) << "backward before forward";
            s = 2;
            --inFlight;
        }
    }
    EXPECT_EQ(static_cast<int>(state.size()), chunks * micro);
    for (const auto& [key, s] : state) EXPECT_EQ(s, 2);
    EXPECT_LE(peak, limit);
}

std::vector<PipelineAction> withoutWeightGrads(const std::vector<PipelineAction>& actions) {
    std::vector<PipelineAction> out;
    for (const auto& a : actions)
        if (a.kind != Kind::WeightGrad) out.push_back(a);
    return out;
}

// Runs every stage's list in its order, each pass as soon as the stage is free and its input is
// there (messages free): F and W take one unit, B one unit where the schedule has W passes and
// two (input and weight gradients together) where it has none. Returns the mean over stages of
// the idle share of the common window, as PipelineBubbles measures it.
double simulatedIdleFraction(Schedule schedule, int p, int m) {
    std::vector<std::vector<PipelineAction>> lists;
    bool split = false;
    for (int s = 0; s < p; ++s) {
        lists.push_back(pipelineSchedule(schedule, p, s, m, 1));
        for (const auto& a : lists.back()) split = split || a.kind == Kind::WeightGrad;
    }
    const double backward = split ? 1.0 : 2.0;
    std::map<std::tuple<int, int, int>, double> done; // (kind, stage, micro) -> end
    std::vector<size_t> next(size_t(p), 0);
    std::vector<double> free(size_t(p), 0.0), busy(size_t(p), 0.0);
    double start = std::numeric_limits<double>::infinity(), end = 0;
    for (bool moved = true; moved;) {
        moved = false;
        for (int s = 0; s < p; ++s) {
            auto& list = lists[size_t(s)];
            while (next[size_t(s)] < list.size()) {
                const PipelineAction a = list[next[size_t(s)]];
                double ready = free[size_t(s)];
                std::tuple<int, int, int> dep{-1, 0, 0};
                if (a.kind == Kind::Forward && s > 0) dep = {int(Kind::Forward), s - 1, a.microbatch};
                if (a.kind == Kind::Backward && s < p - 1) dep = {int(Kind::Backward), s + 1, a.microbatch};
                if (a.kind == Kind::WeightGrad) dep = {int(Kind::Backward), s, a.microbatch};
                if (std::get<0>(dep) >= 0) {
                    auto it = done.find(dep);
                    if (it == done.end()) break;
                    ready = std::max(ready, it->second);
                }
                const double length = a.kind == Kind::Backward ? backward : 1.0;
                done[{int(a.kind), s, a.microbatch}] = ready + length;
                free[size_t(s)] = ready + length;
                busy[size_t(s)] += length;
                start = std::min(start, ready);
                end = std::max(end, ready + length);
                ++next[size_t(s)];
                moved = true;
            }
        }
    }
    double idle = 0;
    for (int s = 0; s < p; ++s) {
        EXPECT_EQ(next[size_t(s)], lists[size_t(s)].size()) << choiceName(schedule) << " deadlocks on stage " << s;
        idle += 1.0 - busy[size_t(s)] / (end - start);
    }
    return idle / p;
}

} // namespace

TEST(PipelineSchedule, GPipeRunsAllForwardsFirst) {
    const auto a = pipelineSchedule(Schedule::GPipe, 4, 1, 8, 1);
    ASSERT_EQ(a.size(), 16u);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(a[static_cast<size_t>(i)].kind, Kind::Forward);
    expectWellFormed(a, 1, 8, 8);
}

TEST(PipelineSchedule, OneFOneBKeepsAtMostStagesMinusStageInFlight) {
    for (int stage = 0; stage < 4; ++stage) {
        const auto a = pipelineSchedule(Schedule::OneFOneB, 4, stage, 8, 1);
        expectWellFormed(a, 1, 8, 4 - stage);
        // Warm-up forwards, then alternation.
        for (int i = 0; i < 4 - stage - 1; ++i) EXPECT_EQ(a[static_cast<size_t>(i)].kind, Kind::Forward);
    }
    // The last stage alternates from the start: F0 B0 F1 B1 ...
    const auto last = pipelineSchedule(Schedule::OneFOneB, 4, 3, 3, 1);
    const std::vector<PipelineAction> expected = {{Kind::Forward, 0, 0}, {Kind::Backward, 0, 0}, {Kind::Forward, 0, 1},
                                                  {Kind::Backward, 0, 1}, {Kind::Forward, 0, 2}, {Kind::Backward, 0, 2}};
    EXPECT_EQ(last, expected);
}

TEST(PipelineSchedule, InterleavedCoversEveryChunkAndNeedsMultipleOfStages) {
    for (int stage = 0; stage < 2; ++stage) {
        const auto a = pipelineSchedule(Schedule::Interleaved, 2, stage, 4, 2);
        expectWellFormed(a, 2, 4, 8);
        // Forwards go through chunk 0 before chunk 1 for the first group of micro-batches.
        EXPECT_EQ(a.front().chunk, 0);
    }
    EXPECT_THROW(pipelineSchedule(Schedule::Interleaved, 2, 0, 3, 2), std::invalid_argument);
    EXPECT_THROW(pipelineSchedule(Schedule::GPipe, 2, 0, 4, 2), std::invalid_argument);
}

TEST(PipelineSchedule, ZeroBubbleRunsOneWeightPassPerMicroBatchAfterItsBackward) {
    int checked = 0;
    for (int p = 2; p <= 8; ++p) {
        for (int m = 1; m <= 16; ++m) {
            for (int stage = 0; stage < p; ++stage) {
                const auto a = pipelineSchedule(Schedule::ZeroBubble, p, stage, m, 1);
                const std::string at = "p " + std::to_string(p) + " m " + std::to_string(m) + " stage " +
                                       std::to_string(stage);
                ASSERT_EQ(a.size(), size_t(3 * m)) << at;
                // Forwards and backwards exactly as 1f1b (so at most p - stage forwards in flight).
                EXPECT_EQ(withoutWeightGrads(a), pipelineSchedule(Schedule::OneFOneB, p, stage, m, 1)) << at;
                expectWellFormed(withoutWeightGrads(a), 1, m, p - stage);
                std::vector<int> state(size_t(m), 0); // 0 none, 1 forward, 2 backward, 3 weight gradients
                int held = 0, peakHeld = 0;           // forward done, W not yet
                for (const auto& x : a) {
                    int& st = state.at(size_t(x.microbatch));
                    const int expected = x.kind == Kind::Forward ? 0 : x.kind == Kind::Backward ? 1 : 2;
                    EXPECT_EQ(st, expected) << at << " micro-batch " << x.microbatch;
                    st = expected + 1;
                    held += x.kind == Kind::Forward ? 1 : x.kind == Kind::WeightGrad ? -1 : 0;
                    peakHeld = std::max(peakHeld, held);
                }
                for (int st : state) EXPECT_EQ(st, 3) << at;
                // Micro-batches waiting for W count against memory: never more than 1f1b's first stage holds.
                EXPECT_LE(peakHeld, std::min(p, m)) << at;
                ++checked;
            }
        }
    }
    EXPECT_EQ(checked, 16 * (2 + 3 + 4 + 5 + 6 + 7 + 8));
    // One stage has no bubble to fill: plain 1f1b.
    EXPECT_EQ(pipelineSchedule(Schedule::ZeroBubble, 1, 0, 4, 1), pipelineSchedule(Schedule::OneFOneB, 1, 0, 4, 1));
    EXPECT_FALSE(splitsBackward(Schedule::ZeroBubble, 1));
    EXPECT_TRUE(splitsBackward(Schedule::ZeroBubble, 2));
    EXPECT_FALSE(splitsBackward(Schedule::OneFOneB, 4));
    EXPECT_THROW(pipelineSchedule(Schedule::ZeroBubble, 2, 0, 4, 2), std::invalid_argument);
}

TEST(PipelineSchedule, ZeroBubbleFillsTheLastStagesWaitWithWeightPasses) {
    // The last stage of two: 1f1b's F0 B0 F1 B1 ..., its W passes where it would wait for the next
    // forward, and the first stage's where holding a third micro-batch would exceed two.
    const auto last = pipelineSchedule(Schedule::ZeroBubble, 2, 1, 3, 1);
    const std::vector<PipelineAction> expectedLast = {
        {Kind::Forward, 0, 0}, {Kind::Backward, 0, 0}, {Kind::Forward, 0, 1},    {Kind::Backward, 0, 1},
        {Kind::WeightGrad, 0, 0}, {Kind::Forward, 0, 2}, {Kind::Backward, 0, 2}, {Kind::WeightGrad, 0, 1},
        {Kind::WeightGrad, 0, 2}};
    EXPECT_EQ(last, expectedLast);
    const auto first = pipelineSchedule(Schedule::ZeroBubble, 2, 0, 3, 1);
    const std::vector<PipelineAction> expectedFirst = {
        {Kind::Forward, 0, 0},    {Kind::Forward, 0, 1},  {Kind::Backward, 0, 0}, {Kind::WeightGrad, 0, 0},
        {Kind::Forward, 0, 2},    {Kind::Backward, 0, 1}, {Kind::WeightGrad, 0, 1}, {Kind::Backward, 0, 2},
        {Kind::WeightGrad, 0, 2}};
    EXPECT_EQ(first, expectedFirst);
}

TEST(PipelineSchedule, ZeroBubbleIdlesAsLittleAsZbH1) {
    for (int p = 2; p <= 4; ++p) {
        for (int m = 4; m <= 16; ++m) {
            const double oneFOneB = simulatedIdleFraction(Schedule::OneFOneB, p, m);
            const double zb = simulatedIdleFraction(Schedule::ZeroBubble, p, m);
            // The simulation reproduces 1f1b's formula (3 (p - 1) idle units of 3 (m + p - 1)) ...
            EXPECT_NEAR(oneFOneB, pipelineBubble(p, m, Schedule::OneFOneB), 1e-12) << "p " << p << " m " << m;
            // ... and zb1 reaches ZB-H1's: p - 1 idle units beside 3m of work, two thirds of 1f1b's
            // idle time gone.
            EXPECT_NEAR(zb, double(p - 1) / double(3 * m + p - 1), 1e-12) << "p " << p << " m " << m;
            EXPECT_NEAR(zb, pipelineBubble(p, m, Schedule::ZeroBubble), 1e-12) << "p " << p << " m " << m;
            EXPECT_LT(zb, oneFOneB / 2) << "p " << p << " m " << m;
        }
    }
}

TEST(StagePartition, BalancesCostAndKeepsEmbeddingAndHeadWithBlocks) {
    // embed, 4 equal blocks, an expensive head
    const std::vector<UnitInfo> units = {{false, 0}, {true, 1}, {true, 1}, {true, 1}, {true, 1}, {false, 2}};
    const auto two = partitionUnits(units, 2);
    // The head's cost pulls the cut forward: [embed, b, b, b] [b, head].
    EXPECT_EQ(two, (std::vector<int>{0, 4, 6}));
    const auto four = partitionUnits(units, 4);
    EXPECT_EQ(four, (std::vector<int>{0, 2, 3, 4, 6}));
    // An explicit split counts blocks.
    EXPECT_EQ(partitionUnits(units, 2, {1, 3}), (std::vector<int>{0, 2, 6}));
    EXPECT_THROW(partitionUnits(units, 5), std::invalid_argument);
    EXPECT_THROW(partitionUnits(units, 2, {2, 3}), std::invalid_argument);
}

#include "trainer/parallel/PipelineSchedule.h"
#include "core/spec/StagePartition.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

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

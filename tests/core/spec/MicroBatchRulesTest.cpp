#include "core/spec/MicroBatchRules.h"

#include <gtest/gtest.h>

namespace parallax {
namespace {

RunSpec batches(int64_t global, int64_t dp) {
    RunSpec s;
    s.train.global_batch = global;
    s.parallel.dp = dp;
    return s;
}

TEST(MicroBatchRules, TheLargestThatFitsAndDividesAReplicasShare) {
    // 24 per step over dp 2: a replica's share is 12, whose divisors up to 5 are 4, 3, 2, 1.
    const RunSpec s = batches(24, 2);
    EXPECT_EQ(usableMicroBatch(s, 5), 4);
    EXPECT_EQ(usableMicroBatch(s, 12), 12);
    EXPECT_EQ(usableMicroBatch(s, 100), 12) << "never more than the share";
    EXPECT_EQ(usableMicroBatch(s, 1), 1);
    EXPECT_EQ(usableMicroBatch(s, 0), 1);
    // A prime share: only 1 and itself.
    EXPECT_EQ(usableMicroBatch(batches(14, 2), 6), 1);
    EXPECT_EQ(usableMicroBatch(batches(14, 2), 7), 7);
}

TEST(MicroBatchRules, AShareThatIsNotWholeLeavesOne) {
    EXPECT_EQ(usableMicroBatch(batches(10, 4), 8), 1);
    // A dp below 1 (not yet validated) counts as 1.
    EXPECT_EQ(usableMicroBatch(batches(8, 0), 8), 8);
}

TEST(MicroBatchRules, ProbesGoUpToAReplicasShare) {
    EXPECT_EQ(largestUsefulMicroBatch(batches(24, 2)), 12);
    EXPECT_EQ(largestUsefulMicroBatch(batches(10, 4)), 2);
    EXPECT_EQ(largestUsefulMicroBatch(batches(2, 4)), 1) << "at least 1";
    EXPECT_EQ(largestUsefulMicroBatch(batches(8, 0)), 8);
}

} // namespace
} // namespace parallax

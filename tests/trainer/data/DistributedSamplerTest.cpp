#include "trainer/data/DistributedSampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <stdexcept>

namespace parallax {
namespace {

// The global batch of a step as one process (dp = 1, one micro-batch) reads it.
std::vector<int64_t> singleProcessBatch(int64_t n, int64_t g, uint64_t seed, bool shuffle, int64_t step) {
    DistributedSampler s(n, g, 1, 0, g, seed, shuffle);
    return s.microBatch(step, 0);
}

TEST(DistributedSampler, RanksAndMicroBatchesTogetherReadTheSingleProcessBatch) {
    const int64_t n = 37, g = 16; // steps run across epoch boundaries
    for (bool shuffle : {true, false}) {
        for (int64_t dp : {1, 2, 4}) {
            for (int64_t mb : {1, 2, 4}) {
                if (g % (dp * mb) != 0) continue;
                std::vector<DistributedSampler> ranks;
                for (int64_t r = 0; r < dp; ++r) ranks.emplace_back(n, g, dp, r, mb, 5, shuffle);
                for (int64_t step : {0, 1, 2, 3, 7, 11}) {
                    std::vector<int64_t> joined;
                    for (auto& rank : ranks)
                        for (int64_t k = 0; k < rank.microBatches(); ++k) {
                            const std::vector<int64_t> micro = rank.microBatch(step, k);
                            ASSERT_EQ(static_cast<int64_t>(micro.size()), mb);
                            joined.insert(joined.end(), micro.begin(), micro.end());
                        }
                    EXPECT_EQ(joined, singleProcessBatch(n, g, 5, shuffle, step))
                        << "dp " << dp << " mb " << mb << " step " << step << " shuffle " << shuffle;
                }
            }
        }
    }
}

TEST(DistributedSampler, EachEpochVisitsEverySampleOnce) {
    const int64_t n = 40, g = 8;
    DistributedSampler s(n, g, 1, 0, g, 9, true);
    std::vector<std::vector<int64_t>> epochs;
    for (int64_t e = 0; e < 3; ++e) {
        std::vector<int64_t> seen;
        for (int64_t step = e * n / g; step < (e + 1) * n / g; ++step) {
            const auto b = s.microBatch(step, 0);
            seen.insert(seen.end(), b.begin(), b.end());
        }
        epochs.push_back(seen);
        std::sort(seen.begin(), seen.end());
        std::vector<int64_t> all(n);
        std::iota(all.begin(), all.end(), 0);
        EXPECT_EQ(seen, all) << "epoch " << e;
    }
    EXPECT_NE(epochs[0], epochs[1]); // reshuffled every epoch
    EXPECT_NE(epochs[1], epochs[2]);
}

TEST(DistributedSampler, WithoutShufflingTheStreamIsInOrder) {
    DistributedSampler s(10, 4, 2, 1, 1, 3, false);
    EXPECT_EQ(s.microBatch(0, 0), (std::vector<int64_t>{2}));
    EXPECT_EQ(s.microBatch(0, 1), (std::vector<int64_t>{3}));
    EXPECT_EQ(s.microBatch(2, 0), (std::vector<int64_t>{0})); // position 10 = epoch 1, sample 0
    EXPECT_EQ(s.microBatch(2, 1), (std::vector<int64_t>{1}));
}

TEST(DistributedSampler, TheSeedChoosesTheOrderAndTheSameSeedRepeatsIt) {
    DistributedSampler a(1000, 32, 1, 0, 32, 1, true), b(1000, 32, 1, 0, 32, 1, true), c(1000, 32, 1, 0, 32, 2, true);
    EXPECT_EQ(a.microBatch(4, 0), b.microBatch(4, 0));
    EXPECT_NE(a.microBatch(4, 0), c.microBatch(4, 0));
}

TEST(DistributedSampler, InconsistentBatchSizesAreRejected) {
    try {
        DistributedSampler(100, 10, 4, 0, 1, 1, true);
        FAIL() << "accepted a global batch that dp does not divide";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("train.global_batch = 10 is not a multiple of parallel.dp * "
                                             "train.micro_batch = 4"),
                  std::string::npos);
    }
    EXPECT_THROW(DistributedSampler(100, 8, 2, 2, 1, 1, true), std::invalid_argument);
    EXPECT_THROW(DistributedSampler(0, 8, 2, 0, 1, 1, true), std::invalid_argument);
    DistributedSampler s(100, 8, 2, 0, 2, 1, true);
    EXPECT_EQ(s.microBatches(), 2);
    EXPECT_THROW(s.microBatch(0, 2), std::out_of_range);
}

// Aspect buckets: 37 samples in groups of 16, 12 and 8, and the last alone in a fourth.
std::vector<int64_t> bucketsOf37() {
    std::vector<int64_t> groups;
    for (int64_t i = 0; i < 37; ++i) groups.push_back(i == 36 ? 9 : i % 3 == 0 ? 7 : i % 3 == 1 ? 3 : i < 24 ? 5 : 7);
    return groups;
}

TEST(DistributedSampler, GroupedMicroBatchesHoldOneGroupOnAnyDataParallelWidth) {
    const std::vector<int64_t> groups = bucketsOf37();
    const int64_t n = 37, g = 8, mb = 2;
    DistributedSampler one(n, g, 1, 0, mb, 3, true);
    const int64_t left = one.setGroups(groups);
    std::map<int64_t, int64_t> sizes;
    for (int64_t id : groups) ++sizes[id];
    int64_t expectLeft = 0;
    for (const auto& [id, size] : sizes) expectLeft += size % mb;
    EXPECT_EQ(left, expectLeft);
    for (int64_t dp : {1, 2, 4}) {
        std::vector<DistributedSampler> ranks;
        for (int64_t r = 0; r < dp; ++r) {
            ranks.emplace_back(n, g, dp, r, mb, 3, true);
            ranks.back().setGroups(groups);
        }
        std::vector<int64_t> seen;
        for (int64_t step = 0; step < 9; ++step) { // over two epochs of 34 positions
            std::vector<int64_t> joined;
            for (auto& rank : ranks)
                for (int64_t k = 0; k < rank.microBatches(); ++k) {
                    const std::vector<int64_t> micro = rank.microBatch(step, k);
                    EXPECT_EQ(groups[micro[0]], groups[micro[1]]) << "dp " << dp << " step " << step;
                    joined.insert(joined.end(), micro.begin(), micro.end());
                }
            std::vector<int64_t> single;
            for (int64_t k = 0; k < g / mb; ++k) {
                const std::vector<int64_t> micro = one.microBatch(step, k);
                single.insert(single.end(), micro.begin(), micro.end());
            }
            EXPECT_EQ(joined, single) << "dp " << dp << " step " << step;
            if (step < 4) seen.insert(seen.end(), joined.begin(), joined.end());
        }
        std::sort(seen.begin(), seen.end());
        EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end()) << "a sample twice within an epoch";
        EXPECT_EQ(std::count(seen.begin(), seen.end(), 36), 0) << "the lone sample makes no micro-batch of 2";
    }
    // One group: the stream is the ungrouped one.
    DistributedSampler plain(n, g, 1, 0, mb, 3, true), single(n, g, 1, 0, mb, 3, true);
    EXPECT_EQ(single.setGroups(std::vector<int64_t>(n, 4)), 0);
    for (int64_t p = 0; p < 80; ++p) EXPECT_EQ(plain.indexAt(p), single.indexAt(p));
    DistributedSampler big(n, 32, 1, 0, 32, 3, true);
    EXPECT_THROW(big.setGroups(groups), std::invalid_argument) << "no group of 32";
}

} // namespace
} // namespace parallax

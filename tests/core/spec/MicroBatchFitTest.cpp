#include "core/spec/MicroBatchFit.h"

#include <gtest/gtest.h>

#include <vector>

namespace parallax {
namespace {

// A probe answering whether a size fits by a threshold, recording the sizes asked for.
struct Threshold {
    int64_t fitsUpTo;
    std::vector<int64_t> asked;
    FitProbe operator()(int64_t mb) {
        asked.push_back(mb);
        FitProbe p;
        p.ran = true;
        p.peak_bytes = 100.0 + 10.0 * static_cast<double>(mb);
        p.fits = mb <= fitsUpTo;
        return p;
    }
};

TEST(MicroBatchSearch, DoublesThenBisectsToTheLargestThatFits) {
    Threshold t{37, {}};
    const FitSearch s = searchLargestMicroBatch([&](int64_t mb) { return t(mb); }, 1024);
    EXPECT_EQ(s.largest, 37);
    EXPECT_FALSE(s.at_maximum);
    EXPECT_EQ(t.asked, (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 48, 40, 36, 38, 37}));
    ASSERT_NE(s.probeOf(38), nullptr);
    EXPECT_FALSE(s.probeOf(38)->fits) << "the size above the answer was probed";
    EXPECT_EQ(s.probeOf(38)->micro_batch, 38);
}

TEST(MicroBatchSearch, StopsAtTheMaximumAndAtOne) {
    Threshold all{1000, {}};
    const FitSearch top = searchLargestMicroBatch([&](int64_t mb) { return all(mb); }, 20);
    EXPECT_EQ(top.largest, 20);
    EXPECT_TRUE(top.at_maximum);
    EXPECT_EQ(all.asked, (std::vector<int64_t>{1, 2, 4, 8, 16, 20}));

    Threshold none{0, {}};
    std::vector<int64_t> reported;
    const FitSearch bottom = searchLargestMicroBatch([&](int64_t mb) { return none(mb); }, 64,
                                                     [&](const FitProbe& p) { reported.push_back(p.micro_batch); });
    EXPECT_EQ(bottom.largest, 0);
    EXPECT_EQ(none.asked, std::vector<int64_t>{1});
    EXPECT_EQ(reported, std::vector<int64_t>{1}) << "each probe is reported as it ends";

    Threshold two{2, {}};
    EXPECT_EQ(searchLargestMicroBatch([&](int64_t mb) { return two(mb); }, 64).largest, 2);
    EXPECT_EQ(two.asked, (std::vector<int64_t>{1, 2, 4, 3}));
    EXPECT_THROW(searchLargestMicroBatch([&](int64_t mb) { return two(mb); }, 0), std::invalid_argument);
}

// A probe that runs out of time says neither "fits" nor "does not fit": the search stops there,
// undecided, and keeps what it knows below it.
TEST(MicroBatchSearch, ATimedOutProbeLeavesTheAnswerUndecided) {
    Threshold t{37, {}};
    // Sizes from `slowest` to `fastest` time out (larger ones fail at once, as one that runs out of
    // memory does).
    const auto timingOutFrom = [&](int64_t slowest, int64_t fastest = 1 << 30) {
        return [&t, slowest, fastest](int64_t mb) {
            FitProbe p = t(mb);
            if (mb >= slowest && mb <= fastest) {
                p.ran = false;
                p.fits = false;
                p.timed_out = true;
            }
            return p;
        };
    };
    const FitSearch doubling = searchLargestMicroBatch(timingOutFrom(4), 1024);
    EXPECT_FALSE(doubling.decided());
    EXPECT_EQ(doubling.undecided, 4);
    EXPECT_EQ(doubling.largest, 2) << "2 fits: that much is known";
    EXPECT_EQ(t.asked, (std::vector<int64_t>{1, 2, 4})) << "nothing past the probe that timed out";

    t.asked.clear();
    const FitSearch bisecting = searchLargestMicroBatch(timingOutFrom(40, 48), 1024);
    EXPECT_EQ(bisecting.undecided, 48);
    EXPECT_EQ(bisecting.largest, 32);
    EXPECT_EQ(t.asked, (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 48}));

    t.asked.clear();
    const FitSearch first = searchLargestMicroBatch(timingOutFrom(1), 1024);
    EXPECT_EQ(first.undecided, 1);
    EXPECT_EQ(first.largest, 0);

    // A probe reported as fitting that also timed out does not fit.
    const FitSearch odd = searchLargestMicroBatch(
        [](int64_t mb) {
            FitProbe p;
            p.ran = p.fits = true;
            p.timed_out = mb == 2;
            return p;
        },
        8);
    EXPECT_EQ(odd.largest, 1);
    EXPECT_EQ(odd.undecided, 2);
    EXPECT_TRUE(searchLargestMicroBatch([&](int64_t mb) { return t(mb); }, 8).decided());
}

TEST(MemoryCorrection, FitsTheRuntimesOwnMemoryAndTheEstimatesScale) {
    std::vector<FitProbe> probes;
    for (double estimate : {40.0, 50.0, 70.0}) {
        FitProbe p;
        p.ran = true;
        p.estimate_bytes = estimate;
        p.peak_bytes = 130.0 + 2.5 * estimate;
        probes.push_back(p);
    }
    FitProbe failed; // a probe that did not run says nothing about memory
    failed.estimate_bytes = 90;
    failed.peak_bytes = 1;
    probes.push_back(failed);
    const MemoryCorrection c = correctEstimate(probes);
    EXPECT_EQ(c.probes, 3);
    EXPECT_NEAR(c.base, 130.0, 1e-6);
    EXPECT_NEAR(c.scale, 2.5, 1e-9);
    EXPECT_NEAR(c.predict(100.0), 380.0, 1e-6);

    const MemoryCorrection one = correctEstimate({probes[0]});
    EXPECT_EQ(one.base, 0);
    EXPECT_NEAR(one.predict(40.0), probes[0].peak_bytes, 1e-9) << "one probe: the ratio";
    EXPECT_EQ(correctEstimate({}).probes, 0);
    EXPECT_EQ(correctEstimate({}).predict(5.0), 5.0);
}

TEST(FitProbeSpec, KeepsTheLayoutAndItsMicroBatchesPerStep) {
    RunSpec spec;
    spec.name = "big";
    spec.parallel.dp = 2;
    spec.parallel.pp = 2;
    spec.train.micro_batch = 4;
    spec.train.global_batch = 32; // 4 micro-batches per step
    spec.train.checkpoint_every = 100;
    const RunSpec p = fitProbeSpec(spec, 3, true, 3);
    EXPECT_EQ(p.train.micro_batch, 3);
    EXPECT_EQ(p.train.global_batch, 24);
    EXPECT_EQ(p.accumulation(), 4) << "a pipeline keeps as many micro-batches in flight";
    EXPECT_TRUE(p.train.activation_checkpointing);
    EXPECT_EQ(p.train.steps, 3);
    EXPECT_EQ(p.train.checkpoint_every, 0);
    EXPECT_EQ(p.parallel.pp, 2);
    EXPECT_EQ(p.name, "big-fit-mb3-ac");
}

} // namespace
} // namespace parallax

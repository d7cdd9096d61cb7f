#include "core/launch/HangDetector.h"
#include "core/launch/RankList.h"

#include <gtest/gtest.h>

using namespace parallax;
using Clock = HangDetector::Clock;
using namespace std::chrono_literals;

namespace {

CommEvent beat(int rank, std::vector<int64_t> enqueued, std::vector<int64_t> completed, const std::string& op = "",
               int64_t seq = 0, double pendingS = 0) {
    CommEvent e;
    e.rank = rank;
    e.groups = {"world", "dp"};
    e.enqueued = std::move(enqueued);
    e.completed = std::move(completed);
    if (!op.empty()) {
        e.pending_op = op;
        e.pending_group = "dp";
        e.pending_seq = seq;
        e.pending_bytes = 4 << 20;
        e.pending_s = pendingS;
    }
    return e;
}

HangDetector detector(int world) {
    HangDetector::Options o;
    o.hang_after = 30s;
    HangDetector d(o);
    d.setWorld(world);
    d.setHostOf([](int rank) { return "node" + std::to_string(rank); });
    StepEvent s;
    s.step_ms = 100;
    d.onStep(s, Clock::time_point{} + 1s);
    return d;
}

const Clock::time_point t0 = Clock::time_point{} + 1s;

} // namespace

TEST(HangDetector, NothingBeforeTheThresholdOrBeforeTheFirstStep) {
    HangDetector fresh{HangDetector::Options{}};
    EXPECT_FALSE(fresh.hang(t0 + 1h)); // setup is not a hang
    HangDetector d = detector(2);
    d.onComm(beat(0, {10, 5}, {10, 4}, "all_reduce", 5, 20), t0 + 20s);
    EXPECT_FALSE(d.hang(t0 + 29s));
    // The threshold is 5 x the median step when that is longer.
    StepEvent slow;
    slow.step_ms = 20000;
    for (int i = 0; i < 5; ++i) d.onStep(slow, t0);
    EXPECT_FALSE(d.hang(t0 + 60s));
    EXPECT_TRUE(d.hang(t0 + 101s));
}

TEST(HangDetector, TheRankThatHasNotEnteredTheCollectiveIsNamed) {
    HangDetector d = detector(3);
    d.onComm(beat(0, {50, 812}, {50, 811}, "all_reduce", 812, 40), t0 + 40s);
    d.onComm(beat(2, {50, 812}, {50, 811}, "all_reduce", 812, 39), t0 + 40s);
    d.onComm(beat(1, {50, 811}, {50, 811}), t0 + 40s); // computing, behind
    const auto f = d.hang(t0 + 41s);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->ranks, std::vector<int>{1});
    EXPECT_EQ(f->step, 0) << "the last completed step";
    EXPECT_EQ(f->message, "no step for 41 s: rank 1 has not entered all_reduce #812 of the dp group (4 MiB) that "
                          "ranks 0, 2 wait in for 40 s (rank 1 on node1 is computing, in no operation)");
}

TEST(HangDetector, ASilentRankIsNamedWithWhatTheOthersWaitIn) {
    HangDetector d = detector(2);
    d.onComm(beat(1, {50, 811}, {50, 811}), t0 + 5s); // then nothing: stopped
    d.onComm(beat(0, {50, 812}, {50, 811}, "all_reduce", 812, 33), t0 + 39s);
    const auto f = d.hang(t0 + 40s);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->ranks, std::vector<int>{1});
    EXPECT_EQ(f->message, "no step for 40 s: rank 1 on node1 is silent (no heartbeat for 35 s: stopped, or its host "
                          "is gone); rank 0 waits in all_reduce #812 of the dp group (4 MiB) for 33 s");
    HangDetector never = detector(2);
    never.onComm(beat(0, {50, 812}, {50, 811}, "all_reduce", 812, 33), t0 + 39s);
    EXPECT_NE(never.hang(t0 + 40s)->message.find("rank 1 on node1 is silent (no heartbeat ever"), std::string::npos);
}

TEST(HangDetector, EveryRankInsideTheSameCollectiveIsAFaultOfTheNetwork) {
    HangDetector d = detector(2);
    d.onComm(beat(0, {50, 812}, {50, 811}, "all_reduce", 812, 45), t0 + 45s);
    d.onComm(beat(1, {50, 812}, {50, 811}, "all_reduce", 812, 44), t0 + 45s);
    const auto f = d.hang(t0 + 46s);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->message, "no step for 46 s: every rank is inside all_reduce #812 of the dp group (4 MiB) for 45 s; "
                          "none lags, so the fault is in the network or the communication library");
}

TEST(HangDetector, AStragglerIsTheRankThatComputesMuchLongerOverTheWindow) {
    HangDetector d = detector(3);
    auto step = [&](int64_t s, double slow) {
        for (int r = 0; r < 3; ++r) {
            RankStepEvent e;
            e.rank = r;
            e.step = s;
            e.compute_ms = r == 2 ? slow : 100;
            d.onRankStep(e);
        }
    };
    for (int64_t s = 0; s < 20; ++s) step(s, 140); // 1.4x: ranks sharing cores, no straggler
    EXPECT_FALSE(d.straggler());
    int64_t named = -1;
    for (int64_t s = 20; s < 40 && named < 0; ++s) {
        step(s, 210); // half speed from step 20
        if (d.straggler()) named = s;
    }
    ASSERT_GE(named, 0);
    EXPECT_LE(named - 20, 10) << "named within 10 steps of the onset";
    const auto f = d.straggler();
    EXPECT_EQ(f->ranks, std::vector<int>{2});
    EXPECT_EQ(f->step, named) << "the step it was found at";
    EXPECT_NE(f->message.find("rank 2 on node2: compute 2.10x the median of the others"), std::string::npos)
        << f->message;
    for (int64_t s = 40; s < 60; ++s) step(s, 100);
    EXPECT_FALSE(d.straggler()) << "it ends when the rank catches up";
}

// dp = 2 x pp = 2: stage 1 computes 1.5x stage 0 by design (the head and the loss), which is no
// straggler; rank 3 at twice its stage peer is named among its stage; a whole stage at twice the
// other is named as the stage the pipeline waits for.
TEST(HangDetector, RanksAreComparedWithinTheirStageAndStagesWithEachOther) {
    HangDetector d = detector(4);
    d.setLayout(2, 1, 2); // ranks 0, 1: stage 0; ranks 2, 3: stage 1
    int64_t s = 0;
    auto steps = [&](int n, std::vector<double> ms) {
        for (int i = 0; i < n; ++i, ++s)
            for (int r = 0; r < 4; ++r) {
                RankStepEvent e;
                e.rank = r;
                e.step = s;
                e.compute_ms = ms[size_t(r)];
                d.onRankStep(e);
            }
    };
    steps(20, {100, 100, 150, 150});
    EXPECT_FALSE(d.straggler()) << d.straggler()->message;
    steps(20, {100, 100, 150, 300});
    auto f = d.straggler();
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->ranks, std::vector<int>{3});
    EXPECT_NE(f->message.find("rank 3 on node3: compute 2.00x the median of the other ranks of pipeline stage 1"),
              std::string::npos)
        << f->message;
    steps(20, {100, 100, 250, 250});
    f = d.straggler();
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->ranks, (std::vector<int>{2, 3}));
    EXPECT_NE(f->message.find("pipeline stage 1 (rank 2 on node2, rank 3 on node3): compute 2.50x the median of the "
                              "other stages"),
              std::string::npos)
        << f->message;
    EXPECT_NE(f->message.find("the stages next to it wait for its activations and gradients"), std::string::npos);
}

TEST(RankList, RangesAreBoundedAndCountsAreRead) {
    EXPECT_EQ(rankRanges({5}), "5");
    EXPECT_EQ(rankRanges({2, 0}), "0, 2");
    EXPECT_EQ(rankRanges({0, 1}), "0, 1");
    EXPECT_EQ(rankRanges({3, 0, 1, 2, 2, 7, 9, 10, 11}), "0-3, 7, 9-11");
    std::vector<int> even;
    for (int r = 0; r < 1024; r += 2) even.push_back(r);
    EXPECT_EQ(rankRanges(even), "0, 2, 4, 6, 8, … (512 pieces in all)");
    EXPECT_EQ(countText(7), "7");
    EXPECT_EQ(countText(1023), "1,023");
    EXPECT_EQ(countText(1234567), "1,234,567");
    EXPECT_EQ(ranksText({4}), "rank 4");
    EXPECT_EQ(ranksText({0, 1, 2, 3}), "ranks 0-3");
    std::vector<int> all(1024);
    for (int r = 0; r < 1024; ++r) all[size_t(r)] = r;
    all.erase(all.begin() + 1019);
    EXPECT_EQ(ranksText(all), "1,023 ranks (0-1018, 1020-1023)");
}

namespace {

// 1,024 ranks on 128 hosts of 8: rank r on node<r / 8>.
HangDetector wideDetector() {
    HangDetector::Options o;
    o.hang_after = 30s;
    HangDetector d(o);
    d.setWorld(1024);
    d.setHostOf([](int rank) { return "node" + std::to_string(rank / 8); });
    StepEvent s;
    s.step_ms = 100;
    d.onStep(s, t0);
    return d;
}

} // namespace

// At 1,024 ranks a hang is said in ranges, a host at a time, in a few lines, however many ranks
// wait; every rank at fault is still in the finding's list.
TEST(HangDetector, AtAThousandRanksTheMessageNamesRangesAndHosts) {
    HangDetector one = wideDetector();
    for (int r = 0; r < 1024; ++r)
        one.onComm(r == 1019 ? beat(r, {50, 5193}, {50, 5193}) : beat(r, {50, 5194}, {50, 5193}, "all_reduce", 5194, 31),
                   r == 1019 ? t0 + 5s : t0 + 39s);
    auto f = one.hang(t0 + 40s);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->ranks, std::vector<int>{1019});
    EXPECT_EQ(f->message, "no step for 40 s: rank 1019 on node127 is silent (no heartbeat for 35 s: stopped, or its "
                          "host is gone); 1,023 ranks (0-1018, 1020-1023) wait in all_reduce #5194 of the dp group "
                          "(4 MiB) for 31 s");
    EXPECT_LT(f->message.size(), 300u);

    // A whole host gone: its eight ranks in one clause.
    HangDetector host = wideDetector();
    for (int r = 0; r < 1016; ++r) host.onComm(beat(r, {50, 5194}, {50, 5193}, "all_reduce", 5194, 31), t0 + 39s);
    f = host.hang(t0 + 40s);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->ranks.size(), 8u);
    EXPECT_EQ(f->message, "no step for 40 s: ranks 1016-1023 on node127 are silent (no heartbeat ever: stopped, or "
                          "their host is gone); 1,016 ranks (0-1015) wait in all_reduce #5194 of the dp group (4 MiB) "
                          "for 31 s");

    // Five hosts gone: three named, the rest counted.
    HangDetector five = wideDetector();
    for (int r = 0; r < 984; ++r) five.onComm(beat(r, {50, 5194}, {50, 5193}, "all_reduce", 5194, 31), t0 + 39s);
    f = five.hang(t0 + 40s);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->ranks.size(), 40u);
    EXPECT_NE(f->message.find("ranks 984-991 on node123 are silent"), std::string::npos) << f->message;
    EXPECT_NE(f->message.find("; and 16 ranks (1008-1023) on 2 more hosts; "), std::string::npos) << f->message;
    EXPECT_LT(f->message.size(), 500u) << f->message;

    // Many ranks behind: the first few said, the rest counted.
    HangDetector behind = wideDetector();
    for (int r = 0; r < 1024; ++r)
        behind.onComm(r % 2 ? beat(r, {50, 5193}, {50, 5193}) : beat(r, {50, 5194}, {50, 5193}, "all_reduce", 5194, 31),
                      t0 + 39s);
    f = behind.hang(t0 + 40s);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->ranks.size(), 512u);
    EXPECT_LT(f->message.size(), 500u) << f->message;
    EXPECT_NE(f->message.find("512 ranks (1, 3, 5, 7, 9, … (512 pieces in all)) have not entered"), std::string::npos)
        << f->message;
}

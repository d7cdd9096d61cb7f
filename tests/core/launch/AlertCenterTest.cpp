// Hang and straggler findings said as notices and alerts: a HangDetector fed events through the
// EventRouter, on a clock the test sets.
#include "core/launch/AlertCenter.h"
#include "core/launch/EventRouter.h"

#include "tests/core/launch/RecordedNotices.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace parallax;
using namespace std::chrono_literals;
using Clock = AlertCenter::Clock;

namespace {

using Notices = parallax::testing::RecordedNotices;

struct Center {
    explicit Center(AlertCenter::HangPolicy policy = {}) : hangs(options()), alerts(hangs, notices, raiser(), policy),
                                                           events(hangs, alerts) {
        hangs.setHostOf([](int rank) { return "node" + std::to_string(rank); });
    }
    static HangDetector::Options options() {
        HangDetector::Options o;
        o.hang_after = 30s;
        return o;
    }
    std::function<void(const RunAlert&)> raiser() {
        return [this](const RunAlert& a) { raised.push_back(a); };
    }
    // One step of three ranks, rank 2 computing `slowMs`.
    void step(int64_t s, double slowMs, Clock::time_point now) {
        for (int r = 0; r < 3; ++r) {
            RankStepEvent e;
            e.rank = r;
            e.step = s;
            e.compute_ms = r == 2 ? slowMs : 100;
            events.onEvent(e, now);
        }
    }
    void start(int world) {
        RunStartEvent e;
        e.world = world;
        e.dp = world;
        e.tp = 1;
        e.pp = 1;
        events.onEvent(e, Clock::time_point{});
    }

    Notices notices;
    std::vector<RunAlert> raised;
    HangDetector hangs;
    AlertCenter alerts;
    EventRouter events;
};

const Clock::time_point t0 = Clock::time_point{} + 1h;

} // namespace

TEST(AlertCenter, AStragglerIsSaidOncePerRankPerMinute) {
    Center c;
    c.start(3);
    int64_t s = 0;
    for (; s < 30; ++s) {
        c.step(s, 250, t0 + s * 100ms);
        c.alerts.check(t0 + s * 100ms);
    }
    // Named within the first steps and not again for the rest of the minute, however many steps.
    EXPECT_EQ(c.notices.count("warn: straggler: rank 2 on node2"), 1u) << c.notices.said.size();
    ASSERT_FALSE(c.raised.empty());
    EXPECT_EQ(c.raised.back().kind, AlertKind::Straggler);
    EXPECT_TRUE(c.raised.back().active);
    EXPECT_EQ(c.raised.back().ranks, std::vector<int>{2});

    // A minute after it was said, it is said again.
    c.step(s, 250, t0 + 2min);
    c.alerts.check(t0 + 2min);
    EXPECT_EQ(c.notices.count("warn: straggler: rank 2 on node2"), 2u);

    // Caught up: the alert ends, without a notice.
    for (++s; s < 60; ++s) {
        c.step(s, 100, t0 + 2min + 1s);
        c.alerts.check(t0 + 2min + 1s);
    }
    EXPECT_EQ(c.raised.back().kind, AlertKind::Straggler);
    EXPECT_FALSE(c.raised.back().active);
    EXPECT_EQ(c.notices.count("warn: straggler"), 2u);
}

TEST(AlertCenter, NoStragglerCheckWithoutNewRankSteps) {
    Center c;
    c.start(3);
    for (int64_t s = 0; s < 30; ++s) c.step(s, 250, t0);
    // The steps arrived before any check: one check looks once.
    c.alerts.check(t0);
    c.alerts.check(t0 + 2min);
    EXPECT_EQ(c.notices.count("warn: straggler"), 1u);
}

namespace {

CommEvent waiting(int rank, const std::string& op, int64_t seq) {
    CommEvent e;
    e.rank = rank;
    e.groups = {"world"};
    e.enqueued = {seq};
    e.completed = {seq - 1};
    e.pending_op = op;
    e.pending_group = "world";
    e.pending_seq = seq;
    e.pending_s = 40;
    return e;
}

} // namespace

TEST(AlertCenter, AHangIsSaidAtOnceEachMinuteAndItsEnd) {
    Center c;
    c.start(2);
    StepEvent step;
    step.step = 10;
    step.step_ms = 100;
    c.events.onEvent(step, t0);
    c.events.onEvent(waiting(0, "all_reduce", 5), t0 + 40s);
    c.events.onEvent(waiting(1, "all_reduce", 5), t0 + 40s);
    EXPECT_FALSE(c.alerts.check(t0 + 20s));
    EXPECT_TRUE(c.notices.said.empty());
    EXPECT_FALSE(c.alerts.check(t0 + 41s));
    ASSERT_EQ(c.notices.count("warn: hang: no step for 41 s"), 1u) << (c.notices.said.empty() ? "" : c.notices.said[0]);
    EXPECT_EQ(c.raised.back().kind, AlertKind::Hang);
    EXPECT_TRUE(c.raised.back().active);
    c.alerts.check(t0 + 41500ms); // within the second: not looked at again
    c.alerts.check(t0 + 60s);
    EXPECT_EQ(c.notices.count("warn: hang"), 1u);
    c.alerts.check(t0 + 101s);
    EXPECT_EQ(c.notices.count("warn: hang"), 2u);

    c.events.onEvent(step, t0 + 102s);
    c.alerts.check(t0 + 103s);
    EXPECT_EQ(c.notices.said.back(), "info: steps again after the hang named above");
    EXPECT_EQ(c.raised.back().kind, AlertKind::Hang);
    EXPECT_FALSE(c.raised.back().active);
}

TEST(AlertCenter, OnHangFailEndsAHangThatLastsNamingTheFlightRecorders) {
    AlertCenter::HangPolicy policy;
    policy.fail = true;
    policy.fail_after = 10s;
    policy.flight_recorders = "/runs/4/flight-rank<R>.json";
    Center c(policy);
    c.start(2);
    StepEvent step;
    step.step_ms = 100;
    c.events.onEvent(step, t0);
    EXPECT_FALSE(c.alerts.check(t0 + 31s)); // the hang begins
    EXPECT_FALSE(c.alerts.check(t0 + 40s));
    EXPECT_TRUE(c.alerts.check(t0 + 41s));
    EXPECT_EQ(c.alerts.failReason().rfind("hang: ", 0), 0u);
    EXPECT_NE(c.alerts.failReason().find("the run was ended after 10 s (telemetry.on_hang = \"fail\"); each rank's "
                                         "flight recorder is in /runs/4/flight-rank<R>.json"),
              std::string::npos)
        << c.alerts.failReason();
    EXPECT_EQ(c.notices.said.back(), "error: " + c.alerts.failReason());
    EXPECT_EQ(c.raised.back().message, c.alerts.failReason());
    EXPECT_FALSE(c.alerts.check(t0 + 50s)) << "said once";
}

TEST(EventRouter, CheckpointsAndTheSlurmJobOfTheRanksAreKept) {
    Center c;
    EXPECT_FALSE(c.events.lastCheckpoint());
    CheckpointEvent cp;
    cp.step = 40;
    c.events.onEvent(cp, t0);
    EXPECT_EQ(c.events.lastCheckpoint(), 40);

    std::vector<std::string> jobs;
    RunStartEvent start;
    start.world = 2;
    start.slurm_job = "77";
    c.events.onEvent(start, t0); // no handler: srun mode is not this run's
    c.events.setSlurmJobHandler([&](const std::string& id) { jobs.push_back(id); });
    c.events.onEvent(start, t0);
    EXPECT_EQ(jobs, std::vector<std::string>{"77"});
}

#include "ui/models/RunSnapshot.h"

#include "tests/ui/live/LiveTestSupport.h"

#include <gtest/gtest.h>

namespace parallax {
namespace {

using test::stepEvent;

RunRecord running(int64_t stepsTotal) {
    RunRecord r;
    r.id = 1;
    r.name = "snap";
    r.state = RunState::Running;
    r.steps_total = stepsTotal;
    r.started_at = 1000;
    return r;
}

TEST(RunSnapshotTest, ProgressAndEtaFollowTheRecentRate) {
    RunSnapshot s;
    s.setRecord(running(1000));
    std::vector<StepEvent> rows;
    // Two steps per second.
    for (int i = 0; i < 100; ++i) rows.push_back(stepEvent(i, 1.0, 1000 + i * 0.5));
    s.addMetrics(rows, true);
    EXPECT_EQ(s.stepsDone(), 100);
    EXPECT_EQ(s.stepsTotal(), 1000);
    EXPECT_NEAR(*s.progress(), 0.1, 1e-12);
    EXPECT_NEAR(*s.stepsPerSecond(), 2.0, 1e-9);
    EXPECT_NEAR(*s.etaSeconds(), 450.0, 1e-6);
    EXPECT_EQ(s.loss()->size(), 100u);
    // Time on the curves counts from the run's start.
    EXPECT_DOUBLE_EQ(s.loss()->x(MetricAxis::Time, 0), 0.0);

    // A finished run has no ETA.
    RunRecord done = running(1000);
    done.state = RunState::Succeeded;
    s.setRecord(done);
    EXPECT_FALSE(s.etaSeconds());
}

TEST(RunSnapshotTest, ResetReplacesHistoryAndRepeatedStepsAreIgnored) {
    RunSnapshot s;
    s.addMetrics({stepEvent(0, 3, 1), stepEvent(1, 2, 2)}, true);
    s.addMetrics({stepEvent(1, 2, 2), stepEvent(2, 1, 3)}, false);
    EXPECT_EQ(s.loss()->size(), 3u);
    s.addMetrics({stepEvent(0, 3, 1)}, true);
    EXPECT_EQ(s.loss()->size(), 1u);
    EXPECT_EQ(s.stepsDone(), 1);
}

TEST(RunSnapshotTest, AStragglerIsTheRankSlowestInMostStepsByAMargin) {
    RunSnapshot s;
    s.setRecord(running(100));
    std::vector<StepEvent> rows;
    for (int i = 0; i < 30; ++i) {
        StepEvent e = stepEvent(i, 1, i);
        e.step_ms_min = 100;
        e.step_ms_max = 140;
        e.slowest_rank = i % 5 == 0 ? 1 : 6;
        rows.push_back(e);
    }
    s.addMetrics(rows, true);
    const auto st = s.straggler();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->rank, 6);
    EXPECT_NEAR(st->spread, 0.4, 1e-12);
    EXPECT_EQ(st->windowSteps, static_cast<int>(RunSnapshot::kWindowSteps));
    EXPECT_EQ(st->slowestSteps, 16);

    // Under the threshold: no flag.
    s.setStragglerThreshold(0.5);
    EXPECT_FALSE(s.straggler());
}

TEST(RunSnapshotTest, NoStragglerFromEvenSpreadNoiseOrTooFewSteps) {
    RunSnapshot s;
    std::vector<StepEvent> rows;
    for (int i = 0; i < 30; ++i) {
        StepEvent e = stepEvent(i, 1, i);
        e.step_ms_min = 100;
        e.step_ms_max = 150;
        e.slowest_rank = i % 4; // a different rank each time
        rows.push_back(e);
    }
    s.addMetrics(rows, true);
    EXPECT_FALSE(s.straggler());

    RunSnapshot few;
    std::vector<StepEvent> two;
    for (int i = 0; i < 2; ++i) {
        StepEvent e = stepEvent(i, 1, i);
        e.step_ms_min = 100;
        e.step_ms_max = 300;
        e.slowest_rank = 2;
        two.push_back(e);
    }
    few.addMetrics(two, true);
    EXPECT_FALSE(few.straggler());
}

TEST(RunSnapshotTest, RemembersTheFirstNonFiniteLoss) {
    RunSnapshot s;
    s.addMetrics({stepEvent(0, 1, 0), stepEvent(1, std::nan(""), 1), stepEvent(2, INFINITY, 2)}, true);
    ASSERT_TRUE(s.firstNonFiniteLossStep());
    EXPECT_EQ(*s.firstNonFiniteLossStep(), 1);
}

TEST(RunSnapshotTest, ThreadsPerRankComeFromTheLaunchCommandElseTheSpec) {
    RunSnapshot s;
    RunRecord r;
    r.id = 1;
    r.world_size = 2;
    r.spec_toml = "name = \"t\"\n\n[launch]\nthreads_per_rank = 2\n";
    s.setRecord(r);
    EXPECT_EQ(s.cpuThreadsPerRank(), 2);
    r.launch_command = "mpirun -np 2 -x OMP_NUM_THREADS=3 /usr/bin/parallax-worker";
    s.setRecord(r);
    EXPECT_EQ(s.cpuThreadsPerRank(), 3);
    // Neither: this machine's cores shared by the ranks of the busiest host.
    r.launch_command.clear();
    r.spec_toml = "name = \"t\"\n";
    s.setRecord(r);
    EXPECT_GE(s.cpuThreadsPerRank(), 1);
}

TEST(RunSnapshotTest, AResumedRunKnowsItsParentAndStepAndOnlyActiveAlertsCount) {
    RunSnapshot s;
    RunRecord r;
    r.id = 5;
    s.setRecord(r);
    EXPECT_FALSE(s.parentRun());
    r.parent_run = 3;
    s.setRecord(r);
    EXPECT_EQ(s.parentRun(), 3);
    EXPECT_FALSE(s.resumedAtStep()); // nothing recorded yet
    s.addMetrics({stepEvent(41, 1.0, 1.7e9)}, true);
    EXPECT_EQ(s.resumedAtStep(), 41);
    RunStartEvent start;
    start.start_step = 40;
    s.setRunStart(start);
    EXPECT_EQ(s.resumedAtStep(), 40);

    RunAlert hang, straggler;
    hang.kind = AlertKind::Hang;
    hang.active = false;
    straggler.kind = AlertKind::Straggler;
    straggler.message = "rank 1: slow";
    s.setAlerts({hang, straggler});
    ASSERT_EQ(s.activeAlerts().size(), 1u);
    EXPECT_EQ(s.activeAlerts().front().kind, AlertKind::Straggler);
    s.clear();
    EXPECT_TRUE(s.activeAlerts().empty());
}

} // namespace
} // namespace parallax

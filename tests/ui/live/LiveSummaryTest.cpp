#include "ui/models/LiveSummary.h"

#include "tests/ui/live/LiveTestSupport.h"

#include <gtest/gtest.h>

#include <QDateTime>

#include <cmath>

namespace parallax {
namespace {

using test::stepEvent;

RunRecord record(RunState state, int64_t stepsTotal = 200) {
    RunRecord r;
    r.id = 7;
    r.name = "summary";
    r.state = state;
    r.steps_total = stepsTotal;
    r.started_at = 1000;
    return r;
}

// A snapshot of a run of 200 steps half way through at two steps a second.
RunSnapshot halfWay(RunState state = RunState::Running) {
    RunSnapshot s;
    s.setRecord(record(state));
    std::vector<StepEvent> rows;
    for (int i = 0; i < 100; ++i) rows.push_back(stepEvent(i, 2.0, 1000 + i * 0.5));
    s.addMetrics(rows, true);
    return s;
}

LiveSummary::Context shown(qint64 run = 7) {
    LiveSummary::Context c;
    c.run = run;
    return c;
}

TEST(LiveSummaryTest, ARunNotYetLoadedIsNamedByItsIdAndOffersNothing) {
    const RunSnapshot empty;
    LiveSummary s = LiveSummary::of(empty, shown(0));
    EXPECT_EQ(s.title, QStringLiteral("No run selected"));
    s = LiveSummary::of(empty, shown(5));
    EXPECT_EQ(s.title, QStringLiteral("Run 5"));
    EXPECT_TRUE(s.state.isEmpty());
    EXPECT_TRUE(s.stateStyle.isEmpty());
    EXPECT_FALSE(s.stateTip) << "the tooltip of the run shown before is not touched";
    EXPECT_EQ(s.progress, QStringLiteral("step 0"));
    EXPECT_EQ(s.progressMaximum, 1);
    EXPECT_FALSE(s.stopEnabled);
    EXPECT_FALSE(s.resumeEnabled);
    EXPECT_TRUE(s.rate.isEmpty());
    EXPECT_FALSE(s.rateTip);
}

TEST(LiveSummaryTest, ARunningRunShowsItsProgressPaceAndStop) {
    const LiveSummary s = LiveSummary::of(halfWay(), shown());
    EXPECT_EQ(s.title, QStringLiteral("summary #7"));
    EXPECT_EQ(s.state, QStringLiteral("running"));
    EXPECT_TRUE(s.stateStyle.contains(QStringLiteral("background: #"))) << s.stateStyle.toStdString();
    EXPECT_EQ(s.progressMaximum, 200);
    EXPECT_EQ(s.progressValue, 100);
    EXPECT_EQ(s.progress, QStringLiteral("step 100 / 200"));
    EXPECT_EQ(s.progressFormat, QStringLiteral("step 100 / 200 (50.0%)"));
    // 100 steps left at two a second.
    EXPECT_EQ(s.eta.text, QStringLiteral("ETA 50s")) << s.eta.text.toStdString();
    EXPECT_TRUE(s.eta.tip.startsWith(QStringLiteral("2 steps/s (the median step of the last 20)"))) << s.eta.tip.toStdString();
    EXPECT_EQ(s.rate, QStringLiteral("5.0k tok/s"));
    ASSERT_TRUE(s.rateTip);
    EXPECT_EQ(*s.rateTip, QStringLiteral("median of the last 20 steps; step 99: 5.0k tok/s, 100.0 ms on rank 0 (fastest "
                                         "rank 100.0 ms, slowest 101.0 ms on rank 0)"));
    EXPECT_EQ(s.mfu, QStringLiteral("MFU 30.0%"));
    EXPECT_FALSE(s.mfuTip) << "no peak known without run_start";
    EXPECT_TRUE(s.failure.isEmpty());
    EXPECT_TRUE(s.lossWarning.isEmpty());
    EXPECT_FALSE(s.resumedFrom);
    EXPECT_TRUE(s.stopEnabled);
    EXPECT_FALSE(s.resumeEnabled);

    // While a Stop or Resume is under way, neither is offered again.
    LiveSummary::Context busy = shown();
    busy.commandBusy = true;
    EXPECT_FALSE(LiveSummary::of(halfWay(), busy).stopEnabled);
    EXPECT_FALSE(LiveSummary::of(halfWay(RunState::Stopped), busy).resumeEnabled);

    // A stopped run that another run already continues is not resumed again; the buttons say why.
    LiveSummary::Context continued = shown();
    continued.resumeRefused = QStringLiteral("Run #8 already continues this run: resume run #8");
    const LiveSummary refused = LiveSummary::of(halfWay(RunState::Stopped), continued);
    EXPECT_FALSE(refused.resumeEnabled);
    EXPECT_EQ(refused.resumeRefused, continued.resumeRefused);
}

// The headline is the median of the recent steps, not the last one; a run whose steps stop shows no
// pace while they do, and after they come back its ETA is that of its usual step, not of the pause.
TEST(LiveSummaryTest, ThePaceIsTheRecentMedianAndAStallShowsNone) {
    RunSnapshot s;
    s.setRecord(record(RunState::Running));
    std::vector<StepEvent> rows;
    for (int i = 0; i < 30; ++i) rows.push_back(stepEvent(i, 2.0, 1000 + i * 0.5));
    rows.back().tokens_per_s = 58000; // one fast step
    s.addMetrics(rows, true);
    LiveSummary::Context at = shown();
    at.now = rows.back().t + 1;
    LiveSummary summary = LiveSummary::of(s, at);
    EXPECT_EQ(summary.rate, QStringLiteral("5.0k tok/s"));
    EXPECT_EQ(summary.eta.text, QStringLiteral("ETA 1m 25s")) << summary.eta.text.toStdString();

    at.now = rows.back().t + 42; // a hang
    summary = LiveSummary::of(s, at);
    EXPECT_EQ(summary.eta.text, QStringLiteral("no step for 42s")) << summary.eta.text.toStdString();
    EXPECT_EQ(summary.rate, QStringLiteral("– tok/s"));

    // The hang ends: the step after it took 42 s, the others half a second.
    s.addMetrics({stepEvent(30, 2.0, rows.back().t + 42)}, false);
    at.now = rows.back().t + 42.5;
    summary = LiveSummary::of(s, at);
    EXPECT_TRUE(summary.eta.text.startsWith(QStringLiteral("ETA 1m 2"))) << summary.eta.text.toStdString();
    EXPECT_EQ(summary.rate, QStringLiteral("5.0k tok/s"));
}

TEST(LiveSummaryTest, MfuNamesThePeakItIsMeasuredAgainst) {
    RunSnapshot s = halfWay();
    RunStartEvent start;
    start.peak_flops = 989e12;
    s.setRunStart(start);
    const LiveSummary summary = LiveSummary::of(s, shown());
    ASSERT_TRUE(summary.mfuTip);
    EXPECT_EQ(*summary.mfuTip, QStringLiteral("model FLOPs utilization against a dense peak of 989.0 TFLOP/s per device"));
}

TEST(LiveSummaryTest, AFailedOrLostRunSaysWhyAndOffersResume) {
    RunSnapshot s = halfWay();
    RunRecord failed = record(RunState::Failed);
    failed.last_step = 2;
    failed.exit_code = 1;
    failed.exit_reason = "rank 1: out of memory";
    s.setRecord(failed);
    LiveSummary summary = LiveSummary::of(s, shown());
    EXPECT_EQ(summary.failure, QStringLiteral("Failed after 3 steps: rank 1: out of memory (exit code 1)"));
    ASSERT_TRUE(summary.stateTip);
    EXPECT_EQ(*summary.stateTip, QStringLiteral("rank 1: out of memory"));
    EXPECT_FALSE(summary.stopEnabled);
    EXPECT_TRUE(summary.resumeEnabled);

    RunRecord lost = record(RunState::Lost);
    lost.last_step = 0;
    s.setRecord(lost);
    EXPECT_EQ(LiveSummary::of(s, shown()).failure, QStringLiteral("Lost after 1 step: no reason was recorded"));

    // A run that ended well, or was stopped, has nothing to explain.
    s.setRecord(record(RunState::Stopped));
    summary = LiveSummary::of(s, shown());
    EXPECT_TRUE(summary.failure.isEmpty());
    EXPECT_TRUE(summary.resumeEnabled);
    s.setRecord(record(RunState::Succeeded));
    summary = LiveSummary::of(s, shown());
    EXPECT_TRUE(summary.failure.isEmpty());
    EXPECT_FALSE(summary.resumeEnabled);
}

// Rank 5 of 8 is the slowest in most steps by 60%.
RunSnapshot straggling() {
    RunSnapshot s;
    s.setRecord(record(RunState::Running));
    RunStartEvent start;
    for (int r = 0; r < 8; ++r) {
        start.hosts.push_back(r < 4 ? "node0" : "node1");
        start.devices.push_back("GPU " + std::to_string(r % 4));
    }
    s.setRunStart(start);
    std::vector<StepEvent> rows;
    for (int i = 0; i < 40; ++i) {
        StepEvent e = stepEvent(i, 2.0, 1000 + i);
        e.step_ms_min = 250;
        e.step_ms_max = 400;
        e.slowest_rank = i % 6 == 0 ? 2 : 5;
        rows.push_back(e);
    }
    s.addMetrics(rows, true);
    return s;
}

TEST(LiveSummaryTest, NamesTheStragglerWithItsHostAndDeviceUnlessTheSupervisorDoes) {
    RunSnapshot s = straggling();
    LiveSummary summary = LiveSummary::of(s, shown());
    ASSERT_TRUE(summary.straggler);
    EXPECT_EQ(summary.straggler->rank, 5);
    EXPECT_TRUE(summary.stragglerText.startsWith(QStringLiteral("Straggler: rank 5 (node1, GPU 1) was the slowest in ")))
        << summary.stragglerText.toStdString();
    EXPECT_TRUE(summary.stragglerText.contains(QStringLiteral("differ by 60% (median)"))) << summary.stragglerText.toStdString();

    RunAlert alert;
    alert.kind = AlertKind::Straggler;
    alert.message = "rank 5 computes 60% longer";
    alert.ranks = {5};
    s.setAlerts({alert});
    summary = LiveSummary::of(s, shown());
    EXPECT_FALSE(summary.straggler) << "the supervisor's alert says more";
    EXPECT_TRUE(summary.stragglerText.isEmpty());
}

TEST(LiveSummaryTest, WarnsOfALossThatIsNotANumber) {
    RunSnapshot s = halfWay();
    s.addMetrics({stepEvent(100, std::nan(""), 1050)}, false);
    EXPECT_EQ(LiveSummary::of(s, shown()).lossWarning,
              QStringLiteral("The loss is not a number from step 100 on (NaN or infinite)."));
}

TEST(LiveSummaryTest, AResumedRunNamesTheRunItContinues) {
    RunSnapshot s;
    RunRecord r = record(RunState::Running);
    r.parent_run = 3;
    s.setRecord(r);
    s.addMetrics({stepEvent(40, 1.0, 1000), stepEvent(41, 1.0, 1001)}, true);
    LiveSummary summary = LiveSummary::of(s, shown());
    ASSERT_TRUE(summary.resumedFrom);
    EXPECT_EQ(summary.resumedFrom->text, QStringLiteral("Resumed from #3 at step 40"));
    EXPECT_EQ(summary.openParent, QStringLiteral("Open #3"));
    LiveSummary::Context withParent = shown();
    withParent.parent = record(RunState::Stopped);
    withParent.parent->name = "base";
    summary = LiveSummary::of(s, withParent);
    EXPECT_EQ(summary.resumedFrom->text, QStringLiteral("Resumed from #3 (base) at step 40"));
    EXPECT_TRUE(summary.resumedFrom->tip.startsWith(QStringLiteral("This run continues #3 from its checkpoint")));
}

TEST(LiveSummaryTest, SaysTheSlurmJobsStatePlaceAndTimeLeft) {
    SlurmJob job;
    job.job_id = "41";
    job.mode = SlurmMode::Batch;
    job.state = "PENDING";
    job.reason = "Resources";
    job.queue_position = 2;
    job.t = 5000;
    EXPECT_EQ(LiveSummary::slurmJob(job, false, 5000).text, QStringLiteral("Slurm job 41 · PENDING (Resources) · place 2 in the queue"));

    job.state = "RUNNING";
    job.reason.clear();
    job.queue_position = 0;
    job.nodes = "node[1-2]";
    job.time_left_s = 3600;
    // As Slurm said it, less the ten minutes since.
    const LiveSummary::Text running = LiveSummary::slurmJob(job, false, 5600);
    EXPECT_EQ(running.text, QStringLiteral("Slurm job 41 · RUNNING · 50m 00s left")) << running.text.toStdString();
    EXPECT_TRUE(running.tip.startsWith(QStringLiteral("A batch job on node[1-2]; Slurm's state as of "))) << running.tip.toStdString();
    EXPECT_EQ(LiveSummary::slurmJob(job, true, 5600).text, QStringLiteral("Slurm job 41 · RUNNING"))
        << "no time left once the run has ended";
}

TEST(LiveSummaryTest, ListsTheSupervisorsAlertsALineEach) {
    RunAlert hang;
    hang.kind = AlertKind::Hang;
    hang.message = "no step for 41 s";
    RunAlert slow;
    slow.kind = AlertKind::Straggler;
    slow.message = "rank 5 is slow";
    EXPECT_EQ(LiveSummary::alertLines({hang, slow}), QStringLiteral("Hang: no step for 41 s\nStraggler: rank 5 is slow"));
    EXPECT_TRUE(LiveSummary::alertLines({}).isEmpty());
}

// Between Launch and the first step a running run says what it waits for: its ranks starting, then
// started and waiting for the first step; not "step 0 / 200".
TEST(LiveSummaryTest, ARunBeforeItsFirstStepSaysItsRanksAreStarting) {
    RunSnapshot s;
    RunRecord r = record(RunState::Running);
    r.world_size = 4;
    s.setRecord(r);
    LiveSummary summary = LiveSummary::of(s, shown());
    EXPECT_EQ(summary.progress, QStringLiteral("starting 4 ranks…"));
    EXPECT_EQ(summary.progressFormat, summary.progress);
    EXPECT_EQ(summary.progressValue, 0);
    RunStartEvent started;
    started.world = 4;
    s.setRunStart(started);
    summary = LiveSummary::of(s, shown());
    EXPECT_EQ(summary.progress, QStringLiteral("4 ranks started · waiting for the first step"));
    s.addMetrics({stepEvent(0, 2.0, 1000)}, true);
    EXPECT_EQ(LiveSummary::of(s, shown()).progress, QStringLiteral("step 1 / 200"));
    // A run that ended before its first step says its steps, as any ended run.
    RunSnapshot failed;
    r.state = RunState::Failed;
    failed.setRecord(r);
    EXPECT_EQ(LiveSummary::of(failed, shown()).progress, QStringLiteral("step 0 / 200"));
}

// A hang the supervisor saw clear is said, with when and the step, and stays after the run ended;
// while the hang is active it is an alert, not a recovery.
TEST(LiveSummaryTest, AHangThatClearedIsSaidToHaveRecovered) {
    RunSnapshot s = halfWay();
    RunAlert hang;
    hang.kind = AlertKind::Hang;
    hang.message = "no step for 41 s: rank 3 waits in all_reduce";
    hang.step = 57;
    hang.t = QDateTime(QDate(2026, 12, 6), QTime(10, 2, 13)).toSecsSinceEpoch();
    s.setAlerts({hang});
    EXPECT_TRUE(LiveSummary::of(s, shown()).recovered.text.isEmpty()) << "still active";
    hang.active = false;
    RunAlert straggler;
    straggler.kind = AlertKind::Straggler;
    straggler.active = false;
    s.setAlerts({hang, straggler});
    const LiveSummary summary = LiveSummary::of(s, shown());
    EXPECT_EQ(summary.recovered.text, QStringLiteral("Recovered at 10:02:13 from a hang at step 57."));
    EXPECT_EQ(summary.recovered.tip,
              QStringLiteral("What the supervisor said while it lasted: no step for 41 s: rank 3 waits in all_reduce"));
    s.setAlerts({straggler});
    EXPECT_TRUE(LiveSummary::of(s, shown()).recovered.text.isEmpty()) << "a straggler that passed is no recovery";
}

} // namespace
} // namespace parallax

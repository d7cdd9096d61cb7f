#include "ui/pages/LivePage.h"

#include "tests/ui/live/LiveTestSupport.h"
#include "ui/models/DeviceGridModel.h"
#include "ui/models/RunListModel.h"
#include "ui/models/StoreWatcher.h"
#include "ui/plots/CurvePlot.h"

#include <qcustomplot.h>
#include "ui/plots/HeatMapPlot.h"
#include "ui/widgets/HostAlarmDelegate.h"

#include <QDateTime>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableView>

#include <gtest/gtest.h>

#include <chrono>

namespace parallax {
namespace {

using namespace std::chrono_literals;
using test::stepEvent;
using test::TempStore;
using test::waitFor;

// The page on a run of the store, shown, with a watcher that polls often.
struct ShownPage {
    StoreWatcher watcher;
    LivePage page{&watcher};
    ShownPage(const TempStore& ts, int64_t run) : watcher(ts.qpath()) {
        watcher.setInterval(20);
        page.resize(1200, 900);
        page.show();
        page.setRun(run);
    }
};

// The page with the store's runs listed as they are now (setRunList left to the test), not shown.
struct PageOverRuns {
    RunListModel runs;
    StoreWatcher watcher;
    LivePage page{&watcher};
    explicit PageOverRuns(const TempStore& ts) : watcher(ts.qpath()) {
        runs.setRuns(ts.store.listRuns());
        watcher.setInterval(20);
    }
};

// A run half way through 200 steps whose rank 5 is the slowest in most steps by 60%.
int64_t craftStragglerRun(TempStore& ts) {
    const int64_t run = ts.newRun("straggling", 200, 8);
    ts.store.markRunning(run, 4242, "node0");
    BatchedWriter w(ts.store, run, 1h);
    RunStartEvent start;
    start.world = 8;
    start.device = "cuda";
    for (int r = 0; r < 8; ++r) {
        start.hosts.push_back(r < 4 ? "node0" : "node1");
        start.devices.push_back("NVIDIA H200 #" + std::to_string(r % 4));
    }
    w.add(start);
    for (int i = 0; i < 100; ++i) {
        StepEvent e = stepEvent(i, 3.0 - i * 0.01, 1.7e9 + i * 0.25);
        e.step_ms_min = 250;
        e.step_ms_max = 400;
        e.slowest_rank = i % 6 == 0 ? 2 : 5;
        w.add(e);
    }
    for (int r = 0; r < 8; ++r) {
        DeviceEvent d;
        d.rank = r;
        d.host = r < 4 ? "node0" : "node1";
        d.device = r % 4;
        d.util = r == 5 ? 99 : 60;
        d.mem_used = 40e9;
        d.mem_total = 141e9;
        d.temp_c = 55;
        d.t = 1.7e9 + 20;
        w.add(d);
    }
    return run;
}

// A run on Slurm shows its job: queued with Slurm's reason and place, then running with the
// time left, as the supervisor records them.
TEST(LivePageTest, ShowsTheSlurmJobItsReasonPlaceAndTimeLeft) {
    TempStore ts;
    const int64_t run = ts.newRun("on-slurm", 100, 2);
    SlurmJob job;
    job.job_id = "41";
    job.mode = SlurmMode::Batch;
    job.state = "PENDING";
    job.reason = "Resources";
    job.queue_position = 2;
    ts.store.setSlurmJob(run, job);
    ShownPage p(ts, run);
    auto* label = p.page.findChild<QLabel*>(QStringLiteral("slurmJob"));
    ASSERT_NE(label, nullptr);
    ASSERT_TRUE(waitFor([&] { return label->isVisible(); })) << "no Slurm job shown";
    EXPECT_EQ(label->text().toStdString(), "Slurm job 41 · PENDING (Resources) · place 2 in the queue");

    ts.store.markRunning(run, 4242, "node0");
    job.state = "RUNNING";
    job.reason.clear();
    job.queue_position = 0;
    job.nodes = "node[1-2]";
    job.time_left_s = 3600;
    job.t = double(QDateTime::currentSecsSinceEpoch());
    ts.store.setSlurmJob(run, job);
    ASSERT_TRUE(waitFor([&] { return label->text().contains(QStringLiteral("RUNNING")); })) << label->text().toStdString();
    EXPECT_TRUE(label->text().startsWith(QStringLiteral("Slurm job 41 · RUNNING · ")));
    EXPECT_TRUE(label->text().endsWith(QStringLiteral(" left"))) << label->text().toStdString();
    EXPECT_TRUE(label->toolTip().contains(QStringLiteral("A batch job on node[1-2]"))) << label->toolTip().toStdString();

    // Another run without a job: nothing of the first one's stays.
    const int64_t other = ts.newRun("local", 10, 1);
    p.page.setRun(other);
    EXPECT_FALSE(label->isVisible());
}

TEST(LivePageTest, ShowsStepOfTotalAndNamesTheStraggler) {
    TempStore ts;
    const int64_t run = craftStragglerRun(ts);
    ShownPage shown(ts, run);
    LivePage& page = shown.page;
    ASSERT_TRUE(waitFor([&] { return page.progressText() == QStringLiteral("step 100 / 200"); })) << page.progressText().toStdString();
    EXPECT_EQ(page.stateText(), QStringLiteral("running"));
    auto* bar = page.findChild<QProgressBar*>();
    ASSERT_TRUE(bar);
    // The widgets refresh on a short timer after the data.
    ASSERT_TRUE(waitFor([&] { return bar->value() == 100; }));
    EXPECT_EQ(bar->maximum(), 200);
    EXPECT_TRUE(bar->text().startsWith(QStringLiteral("step 100 / 200 (50.0%)"))) << bar->text().toStdString();
    ASSERT_TRUE(waitFor([&] { return !page.stragglerText().isEmpty(); }));
    EXPECT_TRUE(page.stragglerText().contains(QStringLiteral("rank 5 (node1, NVIDIA H200 #1)"))) << page.stragglerText().toStdString();
    EXPECT_TRUE(page.stragglerText().contains(QStringLiteral("60%")));
    EXPECT_TRUE(page.stopEnabled());
    EXPECT_FALSE(page.resumeEnabled());
    EXPECT_EQ(page.snapshot().loss()->size(), 100u);

    // The device grid: 2 hosts x 4 GPUs.
    ASSERT_TRUE(waitFor([&] { return page.deviceModel()->rowCount() == 2; }));
    EXPECT_EQ(page.deviceModel()->columnCount(), 4);

    // The plots drew the series, decimated.
    const auto plots = page.findChildren<CurvePlot*>();
    ASSERT_EQ(plots.size(), 4);
    ASSERT_TRUE(waitFor([&] {
        for (CurvePlot* p : plots) {
            if (p->drawnPoints() == 0) return false;
        }
        return true;
    }));

    // A run that has not stepped yet: its ranks starting, and empty plots on the empty default axes,
    // not the last run's.
    for (CurvePlot* p : plots) ASSERT_GT(p->customPlot()->xAxis->range().upper, 50) << "the straggler run's steps";
    const int64_t starting = ts.newRun("starting", 300, 2);
    ts.store.markRunning(starting, 4343, "node0");
    page.setRun(starting);
    ASSERT_TRUE(waitFor([&] { return page.progressText() == QStringLiteral("starting 2 ranks…"); }))
        << page.progressText().toStdString();
    EXPECT_EQ(bar->text(), QStringLiteral("starting 2 ranks…"));
    for (CurvePlot* p : plots) {
        p->replotNow();
        EXPECT_EQ(p->customPlot()->xAxis->range(), QCPRange(0, 1));
        EXPECT_EQ(p->drawnPoints(), 0u);
    }
    page.setRun(run);
    ASSERT_TRUE(waitFor([&] { return page.progressText() == QStringLiteral("step 100 / 200"); }));

    // Steps that no longer differ clear the flag; the run's end flips the buttons.
    {
        BatchedWriter w(ts.store, run, 1h);
        for (int i = 100; i < 130; ++i) w.add(stepEvent(i, 1.0, 1.7e9 + i * 0.25));
    }
    ASSERT_TRUE(waitFor([&] { return page.stragglerText().isEmpty(); }));
    ts.store.finishRun(run, RunState::Stopped, 143, "stopped by the user");
    ASSERT_TRUE(waitFor([&] { return page.stateText() == QStringLiteral("stopped"); }));
    ASSERT_TRUE(waitFor([&] { return page.resumeEnabled() && !page.stopEnabled(); }));
}

TEST(LivePageTest, GroupsDevicesByHostAndMarksASilentHost) {
    TempStore ts;
    const int64_t run = ts.newRun("on-hosts", 100, 4);
    ts.store.markRunning(run, 4242, "node0");
    {
        BatchedWriter w(ts.store, run, 1h);
        w.add(test::cpuRunStart({"node0", "node0", "node1", "node1"}));
        // node1 went silent before its ranks sampled: its row comes from run_start.
        for (int r = 0; r < 2; ++r) {
            DeviceEvent d;
            d.rank = r;
            d.host = "node0";
            d.cpu_pct = 95;
            d.rss = 1e9;
            d.t = 1.7e9 + 5;
            w.add(d);
        }
    }
    HostStatus answering;
    answering.host = "node0";
    answering.state = HostState::Answering;
    answering.latency_ms = 2;
    answering.t = 1.7e9 + 12;
    HostStatus silent = answering;
    silent.host = "node1";
    silent.state = HostState::Silent;
    silent.detail = "silent for 12 s (ssh: connect to host node1 port 22: Connection refused)";
    ts.store.setHostStatus(run, answering);
    ts.store.setHostStatus(run, silent);

    ShownPage shown(ts, run);
    LivePage& page = shown.page;
    DeviceGridModel* grid = page.deviceModel();
    ASSERT_TRUE(waitFor([&] { return !page.hostAlarmText().isEmpty(); })) << "the silent host is named";
    EXPECT_EQ(page.hostAlarmText(),
              QStringLiteral("node1 silent for 12 s (ssh: connect to host node1 port 22: Connection refused)"));
    ASSERT_EQ(grid->rowCount(), 2);
    EXPECT_EQ(grid->headerData(0, Qt::Vertical).toString(), QStringLiteral("node0"));
    EXPECT_EQ(grid->headerData(1, Qt::Vertical).toString(), QStringLiteral("node1\nsilent for 12 s"));
    EXPECT_EQ(grid->data(grid->index(1, 1), DeviceGridModel::RankRole).toInt(), 3);
    EXPECT_FALSE(grid->data(grid->index(1, 1), DeviceGridModel::HasSampleRole).toBool());
    EXPECT_TRUE(grid->data(grid->index(1, 0), DeviceGridModel::HostAlarmRole).toBool());
    EXPECT_FALSE(grid->data(grid->index(0, 0), DeviceGridModel::HostAlarmRole).toBool());
    EXPECT_TRUE(grid->data(grid->index(1, 0), Qt::ToolTipRole).toString().contains(QStringLiteral("silent for 12 s")));

    // The silent host's row is outlined in red; the answering one is not.
    auto* view = page.findChild<QTableView*>();
    ASSERT_NE(view, nullptr);
    ASSERT_TRUE(waitFor([&] { return view->visualRect(grid->index(1, 0)).isValid(); }));
    const QImage shot = view->viewport()->grab().toImage();
    const QRect silentCell = view->visualRect(grid->index(1, 0));
    const QRect answeringCell = view->visualRect(grid->index(0, 0));
    const qreal scale = shot.devicePixelRatio();
    const auto pixel = [&](QPoint p) { return shot.pixelColor(int(p.x() * scale), int(p.y() * scale)); };
    EXPECT_EQ(pixel(silentCell.topLeft() + QPoint(1, 1)), QColor(0xc6, 0x28, 0x28));
    EXPECT_EQ(pixel(silentCell.center() + QPoint(0, silentCell.height() / 2 - 1)), QColor(0xc6, 0x28, 0x28));
    EXPECT_NE(pixel(answeringCell.topLeft() + QPoint(1, 1)), QColor(0xc6, 0x28, 0x28));

    // It answers again: the mark goes; it is lost: named as such.
    silent.state = HostState::Answering;
    silent.detail.clear();
    silent.t += 3;
    ts.store.setHostStatus(run, silent);
    ASSERT_TRUE(waitFor([&] { return page.hostAlarmText().isEmpty(); }));
    EXPECT_FALSE(grid->data(grid->index(1, 0), DeviceGridModel::HostAlarmRole).toBool());
    EXPECT_EQ(grid->headerData(1, Qt::Vertical).toString(), QStringLiteral("node1"));
    silent.state = HostState::Lost;
    silent.detail = "silent for 31 s (ssh: Connection timed out)";
    silent.t += 31;
    ts.store.setHostStatus(run, silent);
    ASSERT_TRUE(waitFor([&] { return !page.hostAlarmText().isEmpty(); }));
    EXPECT_EQ(page.hostAlarmText(), QStringLiteral("node1 lost (silent for 31 s (ssh: Connection timed out))"));
    EXPECT_EQ(grid->headerData(1, Qt::Vertical).toString(), QStringLiteral("node1\nlost"));

    // Another run shows no alarm of this one.
    const int64_t local = ts.newRun("local", 10, 1);
    page.setRun(local);
    EXPECT_TRUE(page.hostAlarmText().isEmpty());
}

TEST(LivePageTest, StopAndResumeAskTheCliOfTheWatchedStoreWithAnArgumentVector) {
    TempStore ts;
    const int64_t run = ts.newRun("cli", 10, 1);
    ts.store.markRunning(run, 1, "here");
    // A stand-in for parallax-cli that records its arguments, one per line.
    const QString record = ts.dir.filePath(QStringLiteral("args.txt"));
    const QString cli = ts.dir.filePath(QStringLiteral("fake cli"));
    {
        QFile f(cli);
        ASSERT_TRUE(f.open(QIODevice::WriteOnly));
        f.write(QStringLiteral("#!/bin/sh\nfor a in \"$@\"; do echo \"$a\" >> '%1'; done\necho asked\n").arg(record).toUtf8());
        f.setPermissions(f.permissions() | QFileDevice::ExeOwner);
    }
    StoreWatcher watcher(ts.qpath());
    watcher.setInterval(20);
    LivePage page(&watcher);
    page.setCliProgram(cli);
    page.setRun(run);
    ASSERT_TRUE(waitFor([&] { return page.stopEnabled(); }));
    QSignalSpy finished(&page, &LivePage::commandFinished);
    page.stopRun();
    ASSERT_TRUE(waitFor([&] { return finished.count() == 1; }));
    EXPECT_TRUE(finished.first().at(1).toBool());
    EXPECT_EQ(finished.first().at(2).toString(), QStringLiteral("asked"));
    QFile args(record);
    ASSERT_TRUE(args.open(QIODevice::ReadOnly));
    // The store the console watches, which need not be parallax-cli's default.
    EXPECT_EQ(args.readAll().toStdString(), QStringLiteral("--store\n%1\nstop\n%2\n").arg(ts.qpath()).arg(run).toStdString());
    args.close();
    QFile::remove(record);

    ts.store.finishRun(run, RunState::Stopped, 143, "stopped");
    ASSERT_TRUE(waitFor([&] { return page.resumeEnabled(); }));
    page.resumeRun();
    ASSERT_TRUE(waitFor([&] { return finished.count() == 2; }));
    ASSERT_TRUE(args.open(QIODevice::ReadOnly));
    EXPECT_EQ(args.readAll().toStdString(),
              QStringLiteral("--store\n%1\nresume\n%2\n--detach\n").arg(ts.qpath()).arg(run).toStdString());

    // A missing binary is reported with its path, not silently ignored.
    page.setCliProgram(ts.dir.filePath(QStringLiteral("missing-cli")));
    page.resumeRun();
    ASSERT_TRUE(waitFor([&] { return finished.count() == 3; }));
    EXPECT_FALSE(finished.last().at(1).toBool());
    EXPECT_TRUE(finished.last().at(2).toString().contains(QStringLiteral("missing-cli")));
}

QModelIndex cellOfRank(const DeviceGridModel* grid, int rank) {
    for (int r = 0; r < grid->rowCount(); ++r)
        for (int c = 0; c < grid->columnCount(); ++c)
            if (grid->data(grid->index(r, c), DeviceGridModel::RankRole).toInt() == rank) return grid->index(r, c);
    return {};
}

// A dp=2 CPU run whose rank 1 stopped: the supervisor's hang alert names it.
TEST(LivePageTest, TheSupervisorsAlertIsABannerAndFramesItsRank) {
    TempStore ts;
    const int64_t run = ts.newRun("hung", 100, 2);
    ts.store.markRunning(run, 4242, "node0");
    {
        BatchedWriter w(ts.store, run, 1h);
        w.add(test::cpuRunStart({"node0", "node0"}));
        // Rank 0 spins in the all-reduce; rank 1 computes.
        for (int r = 0; r < 2; ++r) w.add(test::cpuSample(r, 100, 1.7e9 + 5));
    }
    std::vector<RankStepEvent> steps;
    for (int64_t s = 0; s < 12; ++s) {
        steps.push_back(test::rankStep(0, s, 50, 50));
        steps.push_back(test::rankStep(1, s, 100, 0));
    }
    ts.store.insertEvents(run, steps);
    RunAlert hang;
    hang.kind = AlertKind::Hang;
    hang.message = "no step for 41 s: rank 1 on node0 is silent (no heartbeat for 12 s: stopped, or its host is gone); "
                   "rank 0 waits in allreduce #812 of the dp group (4 KiB) for 40 s";
    hang.ranks = {1};
    hang.since = hang.t = 1.7e9 + 60;
    ts.store.setAlert(run, hang);

    ShownPage shown(ts, run);
    LivePage& page = shown.page;
    ASSERT_TRUE(waitFor([&] { return !page.alertText().isEmpty(); }));
    EXPECT_EQ(page.alertText().toStdString(), "Hang: " + hang.message);
    DeviceGridModel* grid = page.deviceModel();
    ASSERT_TRUE(waitFor([&] { return cellOfRank(grid, 1).isValid() && grid->data(cellOfRank(grid, 1), DeviceGridModel::AlertRole).toBool(); }));
    EXPECT_FALSE(grid->data(cellOfRank(grid, 0), DeviceGridModel::AlertRole).toBool());
    // What each rank does reached the grid from rank_steps.
    ASSERT_TRUE(waitFor([&] { return grid->data(cellOfRank(grid, 0), DeviceGridModel::WaitShareRole).toDouble() == 0.5; }));
    EXPECT_EQ(grid->data(cellOfRank(grid, 1), DeviceGridModel::ComputeShareRole).toDouble(), 1.0);
    auto* heat = page.findChild<HeatMapPlot*>();
    ASSERT_NE(heat, nullptr);
    heat->rebuildNow();
    EXPECT_EQ(heat->mode(), HeatMapPlot::Mode::Steps);
    EXPECT_EQ(heat->rows(), 2);

    // The named rank's cell is framed.
    auto* view = page.findChild<QTableView*>();
    ASSERT_NE(view, nullptr);
    const QRect cell = view->visualRect(cellOfRank(grid, 1));
    const QRect other = view->visualRect(cellOfRank(grid, 0));
    ASSERT_TRUE(cell.isValid());
    const QImage shot = view->viewport()->grab().toImage();
    const qreal scale = shot.devicePixelRatio();
    const auto pixel = [&](QPoint p) { return shot.pixelColor(int(p.x() * scale), int(p.y() * scale)); };
    const QRect frame = HostAlarmDelegate::alertFrame(cell, false);
    EXPECT_EQ(pixel(QPoint(frame.left() + 1, frame.center().y())), HostAlarmDelegate::kAlertColor);
    EXPECT_EQ(pixel(QPoint(frame.center().x(), frame.bottom() - 1)), HostAlarmDelegate::kAlertColor);
    EXPECT_NE(pixel(QPoint(other.left() + 1, other.center().y())), HostAlarmDelegate::kAlertColor);

    // A click on the banner shows the named rank's log.
    QSignalSpy logs(&page, &LivePage::showRankLogs);
    auto* banner = page.findChild<QLabel*>(QStringLiteral("runAlert"));
    ASSERT_NE(banner, nullptr);
    QTest::mouseClick(banner, Qt::LeftButton);
    ASSERT_EQ(logs.count(), 1);
    EXPECT_EQ(logs.first().at(1).toInt(), 1);

    // The hang ends: the banner and the frame go.
    hang.active = false;
    ts.store.setAlert(run, hang);
    ASSERT_TRUE(waitFor([&] { return page.alertText().isEmpty(); }));
    EXPECT_FALSE(grid->data(cellOfRank(grid, 1), DeviceGridModel::AlertRole).toBool());
}

TEST(LivePageTest, PicksARunAndFollowsOneThatStartsUntilAPersonPicks) {
    TempStore ts;
    const int64_t first = ts.newRun("first", 10, 1);
    ts.store.markRunning(first, 1, "here");
    ts.store.finishRun(first, RunState::Succeeded, 0, "");
    const int64_t second = ts.newRun("second", 10, 1);
    ts.store.markRunning(second, 2, "here");
    PageOverRuns over(ts);
    RunListModel& runs = over.runs;
    LivePage& page = over.page;
    QSignalSpy followed(&page, &LivePage::runFollowed);
    page.setRunList(&runs);
    EXPECT_TRUE(page.followsNewRuns());
    EXPECT_EQ(page.run(), second);
    ASSERT_EQ(followed.count(), 1);
    EXPECT_EQ(page.pickerTexts(), (QStringList{QStringLiteral("#%1  second · running").arg(second),
                                               QStringLiteral("#%1  first · succeeded").arg(first)}));

    // A run started from a terminal appears in the store: Live switches to it and says so.
    const int64_t third = ts.newRun("from-terminal", 10, 1);
    ts.store.markRunning(third, 3, "here");
    runs.setRuns(ts.store.listRuns());
    EXPECT_EQ(page.run(), third);
    ASSERT_EQ(followed.count(), 2);
    EXPECT_EQ(followed.last().at(1).toString(),
              QStringLiteral("Live follows run #%1 (from-terminal), which started; it showed #%2").arg(third).arg(second));
    EXPECT_EQ(page.pickerTexts().value(0), QStringLiteral("#%1  from-terminal · running").arg(third));

    // A run a person picks stays.
    page.pickRun(first);
    EXPECT_EQ(page.run(), first);
    EXPECT_FALSE(page.followsNewRuns());
    const int64_t fourth = ts.newRun("another", 10, 1);
    ts.store.markRunning(fourth, 4, "here");
    runs.setRuns(ts.store.listRuns());
    EXPECT_EQ(page.run(), first);
    EXPECT_EQ(followed.count(), 2);
    ASSERT_TRUE(waitFor([&] { return page.stateText() == QStringLiteral("succeeded"); }));
    // Following again goes to the newest running run.
    page.setFollowNewRuns(true);
    EXPECT_EQ(page.run(), fourth);
}

// launch.on_host_failure = "resume": the run watched fails and goes on as another; Live follows that
// one even when it does not follow new runs, but not a continuation of a run opened after it ended.
TEST(LivePageTest, FollowsTheContinuationOfTheRunItWatched) {
    TempStore ts;
    const int64_t watched = ts.newRun("elastic", 100, 2);
    ts.store.markRunning(watched, 1, "here");
    const int64_t other = ts.newRun("other", 100, 1);
    ts.store.markRunning(other, 2, "here");
    PageOverRuns over(ts);
    RunListModel& runs = over.runs;
    LivePage& page = over.page;
    page.setRunList(&runs);
    page.pickRun(watched);
    EXPECT_FALSE(page.followsNewRuns());
    QSignalSpy followed(&page, &LivePage::runFollowed);
    ts.store.finishRun(watched, RunState::Failed, 1, "node2 has not answered for 5 s");
    runs.setRuns(ts.store.listRuns());
    EXPECT_EQ(page.run(), watched);
    NewRun n;
    n.name = "elastic";
    n.steps_total = 100;
    n.world_size = 1;
    n.parent_run = watched;
    const int64_t continued = ts.store.createRun(n);
    ts.store.markRunning(continued, 3, "here");
    runs.setRuns(ts.store.listRuns());
    EXPECT_EQ(page.run(), continued);
    ASSERT_EQ(followed.count(), 1);
    EXPECT_EQ(followed.last().at(1).toString(),
              QStringLiteral("Live follows run #%1, which continues #%2 (failed: node2 has not answered for 5 s)")
                  .arg(continued)
                  .arg(watched));

    // Opened once it had ended: it stays, its continuation running or not.
    page.pickRun(watched);
    runs.setRuns(ts.store.listRuns());
    EXPECT_EQ(page.run(), watched);
    EXPECT_EQ(followed.count(), 1);
}

TEST(LivePageTest, AResumedRunNamesTheRunItContinuesAndOpensIt) {
    TempStore ts;
    const int64_t parent = ts.newRun("base", 100, 1);
    ts.store.markRunning(parent, 1, "here");
    ts.store.finishRun(parent, RunState::Stopped, 143, "stopped");
    NewRun n;
    n.name = "base";
    n.steps_total = 100;
    n.world_size = 1;
    n.parent_run = parent;
    const int64_t child = ts.store.createRun(n);
    ts.store.markRunning(child, 2, "here");
    RunStartEvent start;
    start.start_step = 40;
    ts.store.setRunStart(child, start);
    const int64_t fresh = ts.newRun("fresh", 10, 1);
    PageOverRuns over(ts);
    RunListModel& runs = over.runs;
    LivePage& page = over.page;
    page.setRunList(&runs);
    page.setRun(child);
    ASSERT_TRUE(waitFor([&] { return page.resumedText() == QStringLiteral("Resumed from #%1 (base) at step 40").arg(parent); }))
        << page.resumedText().toStdString();
    QPushButton* open = nullptr;
    for (QPushButton* b : page.findChildren<QPushButton*>())
        if (b->text() == QStringLiteral("Open #%1").arg(parent)) open = b;
    ASSERT_NE(open, nullptr);
    QSignalSpy opened(&page, &LivePage::openRun);
    open->click();
    ASSERT_EQ(opened.count(), 1);
    EXPECT_EQ(opened.first().at(0).toLongLong(), parent);

    page.setRun(fresh);
    ASSERT_TRUE(waitFor([&] { return page.stateText() == QStringLiteral("queued"); }));
    EXPECT_TRUE(page.resumedText().isEmpty());

    // The stopped parent, which the child already continues, is not resumed again: Resume and
    // Resume with changes are off and name the run that continues it.
    page.setRun(parent);
    ASSERT_TRUE(waitFor([&] { return page.stateText() == QStringLiteral("stopped"); }));
    auto* withChanges = page.findChild<QPushButton*>(QStringLiteral("resumeWithChanges"));
    ASSERT_NE(withChanges, nullptr);
    const QString why = QStringLiteral("Run #%1 already continues this run (running)").arg(child);
    ASSERT_TRUE(waitFor([&] { return withChanges->toolTip() == why; })) << withChanges->toolTip().toStdString();
    EXPECT_FALSE(page.resumeEnabled());
    EXPECT_FALSE(withChanges->isEnabled());
}

} // namespace
} // namespace parallax

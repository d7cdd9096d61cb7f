#include "ui/pages/LivePage.h"

#include "tests/ui/live/LiveTestSupport.h"
#include "ui/models/DeviceGridModel.h"
#include "ui/models/StoreWatcher.h"
#include "ui/plots/CurvePlot.h"

#include <QFile>
#include <QImage>
#include <QProgressBar>
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

TEST(LivePageTest, ShowsStepOfTotalAndNamesTheStraggler) {
    TempStore ts;
    const int64_t run = craftStragglerRun(ts);
    StoreWatcher watcher(ts.qpath());
    watcher.setInterval(20);
    LivePage page(&watcher);
    page.resize(1200, 900);
    page.show();
    page.setRun(run);
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
        RunStartEvent start;
        start.world = 4;
        start.device = "cpu";
        start.hosts = {"node0", "node0", "node1", "node1"};
        start.devices.assign(4, "cpu");
        w.add(start);
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
    answering.state = "answering";
    answering.latency_ms = 2;
    answering.t = 1.7e9 + 12;
    HostStatus silent = answering;
    silent.host = "node1";
    silent.state = "silent";
    silent.detail = "silent for 12 s (ssh: connect to host node1 port 22: Connection refused)";
    ts.store.setHostStatus(run, answering);
    ts.store.setHostStatus(run, silent);

    StoreWatcher watcher(ts.qpath());
    watcher.setInterval(20);
    LivePage page(&watcher);
    page.resize(1200, 900);
    page.show();
    page.setRun(run);
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
    silent.state = "answering";
    silent.detail.clear();
    silent.t += 3;
    ts.store.setHostStatus(run, silent);
    ASSERT_TRUE(waitFor([&] { return page.hostAlarmText().isEmpty(); }));
    EXPECT_FALSE(grid->data(grid->index(1, 0), DeviceGridModel::HostAlarmRole).toBool());
    EXPECT_EQ(grid->headerData(1, Qt::Vertical).toString(), QStringLiteral("node1"));
    silent.state = "lost";
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

} // namespace
} // namespace parallax

#include "ui/models/DeviceGridModel.h"

#include "tests/ui/live/LiveTestSupport.h"

#include "ui/models/RankActivityPalette.h"

#include <QAbstractItemModelTester>
#include <QColor>

#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

namespace parallax {
namespace {

using test::cpuSample;
using test::rankStep;

DeviceEvent gpu(int rank, const std::string& host, int device, double util, double t) {
    DeviceEvent e;
    e.rank = rank;
    e.host = host;
    e.device = device;
    e.util = util;
    e.mem_used = 30e9;
    e.mem_total = 80e9;
    e.temp_c = 60;
    e.t = t;
    return e;
}

// A 1-thread CPU rank whose process also runs MPI's and the loader's threads uses more than one
// core: the cell says how many cores, not "132%".
TEST(DeviceGridModelTest, ACpuRankShowsTheCoresItUses) {
    DeviceGridModel model;
    model.setCpuThreadsPerRank(1);
    model.addSamples({cpuSample(0, 132, 1.7e9)}, true);
    const QString text = model.index(0, 0).data(Qt::DisplayRole).toString();
    EXPECT_EQ(text, QStringLiteral("r0\n1.3 cores"));
    EXPECT_FALSE(text.contains(QStringLiteral("132%"))) << text.toStdString();
    EXPECT_TRUE(model.index(0, 0).data(Qt::ToolTipRole).toString().contains(QStringLiteral("process CPU 132%")));
}

// Once the run has ended its cells say so, in grey, and read as its last figures, not live ones.
TEST(DeviceGridModelTest, AnEndedRunsCellsSayItEnded) {
    DeviceGridModel model;
    model.addSamples({cpuSample(0, 100, 1.7e9)}, true);
    model.addRankSteps({rankStep(0, 0, 85, 15), rankStep(0, 1, 85, 15)}, true);
    const QModelIndex cell = model.index(0, 0);
    EXPECT_EQ(cell.data(Qt::DisplayRole).toString(), QStringLiteral("r0\n85%"));
    const QColor live = cell.data(Qt::BackgroundRole).value<QColor>();
    model.setRunEnded(true);
    // The cell keeps its last figure; the grey and the tooltip say the run ended.
    EXPECT_EQ(cell.data(Qt::DisplayRole).toString(), QStringLiteral("r0\n85%"));
    EXPECT_NE(cell.data(Qt::BackgroundRole).value<QColor>(), live);
    EXPECT_TRUE(cell.data(Qt::ToolTipRole).toString().contains(QStringLiteral("the run has ended")));
    model.clear();
    EXPECT_FALSE(model.runEnded()) << "the next run shown starts live";
}

TEST(DeviceGridModelTest, HostsAreRowsAndDevicesAreColumns) {
    DeviceGridModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
    std::vector<DeviceEvent> batch;
    for (int r = 0; r < 4; ++r) batch.push_back(gpu(r, r < 2 ? "node-a" : "node-b", r % 2, 50 + r, 10));
    model.addSamples(batch, true);
    ASSERT_EQ(model.rowCount(), 2);
    ASSERT_EQ(model.columnCount(), 2);
    EXPECT_EQ(model.headerData(1, Qt::Vertical).toString(), QStringLiteral("node-b"));
    EXPECT_EQ(model.data(model.index(1, 1), DeviceGridModel::RankRole).toInt(), 3);
    EXPECT_DOUBLE_EQ(model.data(model.index(1, 0), DeviceGridModel::UtilizationRole).toDouble(), 52.0);
    EXPECT_TRUE(model.data(model.index(0, 0), DeviceGridModel::IsGpuRole).toBool());
    EXPECT_EQ(model.data(model.index(0, 0)).toString(), QStringLiteral("r0\n50%"));
    EXPECT_TRUE(model.data(model.index(0, 0), Qt::ToolTipRole).toString().contains(QStringLiteral("GPU 0: 50% busy")));

    // Newer samples update the tiles and grow each rank's history; the tester checks the
    // signals while they arrive.
    for (int k = 1; k <= 20; ++k) {
        std::vector<DeviceEvent> more;
        for (int r = 0; r < 4; ++r) more.push_back(gpu(r, r < 2 ? "node-a" : "node-b", r % 2, k, 10 + k));
        model.addSamples(more, false);
    }
    EXPECT_DOUBLE_EQ(model.data(model.index(0, 1), DeviceGridModel::UtilizationRole).toDouble(), 20.0);
    ASSERT_EQ(model.histories().size(), 4u);
    EXPECT_EQ(model.histories()[2].t.size(), 21u);
    EXPECT_EQ(model.histories()[2].rank, 2);

    // A rank that joins later reshapes the grid.
    model.addSamples({gpu(4, "node-c", 0, 99, 31)}, false);
    EXPECT_EQ(model.rowCount(), 3);
}

TEST(DeviceGridModelTest, ARankThatStopsSamplingIsMarkedStale) {
    DeviceGridModel model;
    model.addSamples({gpu(0, "h", 0, 90, 100), gpu(1, "h", 1, 90, 100)}, true);
    model.addSamples({gpu(0, "h", 0, 90, 100 + DeviceGridModel::kStaleSeconds + 5)}, false);
    EXPECT_FALSE(model.data(model.index(0, 0), DeviceGridModel::StaleRole).toBool());
    EXPECT_TRUE(model.data(model.index(0, 1), DeviceGridModel::StaleRole).toBool());
    EXPECT_TRUE(model.data(model.index(0, 1), Qt::ToolTipRole).toString().contains(QStringLiteral("hung")));
}

TEST(DeviceGridModelTest, CpuRunsShowProcessCpuAndRss) {
    DeviceGridModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
    std::vector<DeviceEvent> batch;
    for (int r = 0; r < 3; ++r) {
        DeviceEvent e;
        e.rank = r;
        e.host = "laptop";
        e.device = -1;
        e.cpu_pct = 100.0 * (r + 1);
        e.rss = 1.5e9;
        e.t = 5;
        batch.push_back(e);
    }
    model.addSamples(batch, true);
    ASSERT_EQ(model.rowCount(), 1);
    ASSERT_EQ(model.columnCount(), 3);
    EXPECT_FALSE(model.isGpu());
    EXPECT_DOUBLE_EQ(model.data(model.index(0, 2), DeviceGridModel::UtilizationRole).toDouble(), 300.0);
    EXPECT_DOUBLE_EQ(model.data(model.index(0, 2), DeviceGridModel::MemoryUsedRole).toDouble(), 1.5e9);
    EXPECT_EQ(model.data(model.index(0, 2)).toString(), QStringLiteral("r2\n3.0 cores"));
    EXPECT_TRUE(model.data(model.index(0, 0), Qt::ToolTipRole).toString().contains(QStringLiteral("RSS 1.4 GiB")));
}

TEST(DeviceGridModelTest, RanksOfRunStartHaveTilesBeforeTheySample) {
    DeviceGridModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
    model.setRankHosts({"node-a", "node-a", "node-b", "node-b"});
    ASSERT_EQ(model.rowCount(), 2);
    ASSERT_EQ(model.columnCount(), 2);
    EXPECT_EQ(model.headerData(1, Qt::Vertical).toString(), QStringLiteral("node-b"));
    EXPECT_EQ(model.data(model.index(1, 0), DeviceGridModel::RankRole).toInt(), 2);
    EXPECT_FALSE(model.data(model.index(1, 0), DeviceGridModel::HasSampleRole).toBool());
    EXPECT_EQ(model.data(model.index(1, 0)).toString(), QStringLiteral("r2\nno sample"));
    EXPECT_TRUE(model.data(model.index(1, 0), Qt::ToolTipRole).toString().contains(QStringLiteral("no device sample yet")));

    // Samples take the ranks' GPU slots; the history reset keeps run_start's hosts.
    model.addSamples({gpu(1, "node-a", 0, 70, 10), gpu(0, "node-a", 1, 60, 10)}, true);
    ASSERT_EQ(model.rowCount(), 2);
    EXPECT_EQ(model.data(model.index(0, 0), DeviceGridModel::RankRole).toInt(), 1);
    EXPECT_TRUE(model.data(model.index(0, 0), DeviceGridModel::HasSampleRole).toBool());
    EXPECT_EQ(model.data(model.index(0, 1), DeviceGridModel::RankRole).toInt(), 0);
    EXPECT_FALSE(model.data(model.index(1, 1), DeviceGridModel::HasSampleRole).toBool());
    model.addSamples({gpu(3, "node-b", 1, 10, 11)}, false);
    EXPECT_EQ(model.data(model.index(1, 1), DeviceGridModel::RankRole).toInt(), 3);
    EXPECT_TRUE(model.data(model.index(1, 1), DeviceGridModel::HasSampleRole).toBool());
    EXPECT_EQ(model.data(model.index(1, 0), DeviceGridModel::RankRole).toInt(), 2);
}

TEST(DeviceGridModelTest, MarksTheRowOfAHostThatIsSilentOrLost) {
    DeviceGridModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
    model.addSamples({gpu(0, "node1", 0, 50, 10), gpu(1, "node2", 0, 50, 10), gpu(2, "10.0.0.3", 0, 50, 10)}, true);
    HostStatus silent;
    // The profile's name may carry the domain the worker's hostname leaves out.
    silent.host = "node2.cluster.local";
    silent.state = HostState::Silent;
    silent.detail = "silent for 12 s (ssh: Connection refused)";
    HostStatus answering;
    answering.host = "node1";
    answering.state = HostState::Answering;
    answering.latency_ms = 4;
    HostStatus other;
    other.host = "10.0.0.31";
    other.state = HostState::Lost;
    model.setHostStatuses({answering, silent, other});
    EXPECT_FALSE(model.data(model.index(0, 0), DeviceGridModel::HostAlarmRole).toBool());
    EXPECT_EQ(model.data(model.index(0, 0), DeviceGridModel::HostStateRole).toString(), QStringLiteral("answering"));
    EXPECT_TRUE(model.data(model.index(1, 0), DeviceGridModel::HostAlarmRole).toBool());
    EXPECT_EQ(model.headerData(1, Qt::Vertical).toString(), QStringLiteral("node2\nsilent for 12 s"));
    EXPECT_EQ(model.headerData(1, Qt::Vertical, Qt::ToolTipRole).toString(),
              QStringLiteral("node2.cluster.local silent for 12 s (ssh: Connection refused)"));
    EXPECT_TRUE(model.headerData(1, Qt::Vertical, Qt::ForegroundRole).isValid());
    EXPECT_FALSE(model.headerData(0, Qt::Vertical, Qt::ForegroundRole).isValid());
    // Addresses match only when equal: 10.0.0.31 is not 10.0.0.3.
    EXPECT_FALSE(model.data(model.index(2, 0), DeviceGridModel::HostAlarmRole).toBool());
    EXPECT_EQ(model.data(model.index(2, 0), DeviceGridModel::HostStateRole).toString(), QString());
    EXPECT_EQ(DeviceGridModel::hostStatusText(other), QStringLiteral("10.0.0.31 lost"));
}


// A dp=2 CPU run whose rank 1 is slow: rank 0 spins at 100% CPU inside the all-reduce waiting
// for it, rank 1 computes at 55% CPU (it shares its cores).
TEST(DeviceGridModelTest, ColoursEachRankByWhetherItComputesOrWaits) {
    DeviceGridModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
    m.addSamples({cpuSample(0, 100, 10), cpuSample(1, 55, 10)}, true);
    std::vector<RankStepEvent> steps;
    for (int64_t s = 0; s < 12; ++s) {
        steps.push_back(rankStep(0, s, 55, 45));
        steps.push_back(rankStep(1, s, 100, 0));
    }
    m.addRankSteps(steps, true);
    const QModelIndex healthy = m.index(0, 0), slow = m.index(0, 1);
    ASSERT_EQ(m.data(slow, DeviceGridModel::RankRole).toInt(), 1);
    EXPECT_NEAR(m.data(healthy, DeviceGridModel::WaitShareRole).toDouble(), 0.45, 1e-9);
    EXPECT_NEAR(m.data(slow, DeviceGridModel::ComputeShareRole).toDouble(), 1.0, 1e-9);
    // The colour is what the rank does, not how hot its CPU is: the slow rank is the warm one.
    EXPECT_EQ(m.data(slow, Qt::BackgroundRole).value<QColor>(), RankActivityPalette::color(1.0));
    EXPECT_EQ(m.data(healthy, Qt::BackgroundRole).value<QColor>(), RankActivityPalette::color(0.55));
    EXPECT_GT(m.data(slow, Qt::BackgroundRole).value<QColor>().red(),
              m.data(healthy, Qt::BackgroundRole).value<QColor>().red());
    EXPECT_LT(m.data(slow, Qt::BackgroundRole).value<QColor>().blue(),
              m.data(healthy, Qt::BackgroundRole).value<QColor>().blue());
    EXPECT_EQ(m.data(healthy, Qt::DisplayRole).toString(), QStringLiteral("r0\n55%"));
    EXPECT_TRUE(m.data(healthy, Qt::ToolTipRole).toString().contains(QStringLiteral("waits 45.0 ms in collectives (45% of its step)")))
        << m.data(healthy, Qt::ToolTipRole).toString().toStdString();

    EXPECT_TRUE(m.headerData(0, Qt::Horizontal, Qt::ToolTipRole).toString().contains(QStringLiteral("waited in collectives")));

    // Only the last kActivitySteps steps count: rank 0 stops waiting.
    steps.clear();
    for (int64_t s = 12; s < 12 + int64_t(DeviceGridModel::kActivitySteps); ++s) steps.push_back(rankStep(0, s, 90, 10));
    m.addRankSteps(steps, false);
    EXPECT_NEAR(m.data(healthy, DeviceGridModel::WaitShareRole).toDouble(), 0.10, 1e-9);

    // The heat map's history: every step of every rank.
    ASSERT_EQ(m.stepHistories().size(), 2u);
    EXPECT_EQ(m.stepHistories()[0].steps.size(), 12u + DeviceGridModel::kActivitySteps);
    EXPECT_EQ(m.stepHistories()[1].label, QStringLiteral("r1 node0"));
    EXPECT_NEAR(m.stepHistories()[0].computeShare.front(), 0.55, 1e-6);
}

TEST(DeviceGridModelTest, ALongRunsStepHistoryStaysBounded) {
    DeviceGridModel m;
    std::vector<RankStepEvent> steps;
    for (int64_t s = 0; s < 20000; ++s) steps.push_back(rankStep(0, s, s < 10000 ? 100 : 50, s < 10000 ? 0 : 50));
    m.addRankSteps(steps, true);
    const auto& h = m.stepHistories().front();
    ASSERT_LE(h.steps.size(), DeviceGridModel::kMaxStepHistory);
    EXPECT_GE(h.steps.size(), DeviceGridModel::kMaxStepHistory / 2);
    EXPECT_EQ(h.steps.front(), 0);
    EXPECT_EQ(h.steps.back(), 19999);
    EXPECT_TRUE(std::is_sorted(h.steps.begin(), h.steps.end()));
    EXPECT_NEAR(h.computeShare.front(), 1.0, 1e-6);
    EXPECT_NEAR(h.computeShare.back(), 0.5, 1e-6);
}

// An hour and a half of samples at two a second: the utilization history halves its oldest
// detail past its bound instead of growing, and keeps its first and last times and values.
TEST(DeviceGridModelTest, ALongRunsUtilizationHistoryStaysBounded) {
    DeviceGridModel m;
    m.setCpuThreadsPerRank(1);
    std::vector<DeviceEvent> samples;
    for (int i = 0; i < 10800; ++i) samples.push_back(cpuSample(0, i < 5400 ? 100 : 50, 1000 + 0.5 * i));
    m.addSamples(samples, true);
    std::vector<DeviceEvent> more;
    for (int i = 10800; i < 11000; ++i) more.push_back(cpuSample(0, 50, 1000 + 0.5 * i));
    m.addSamples(more, false);
    const auto& h = m.histories().front();
    ASSERT_LE(h.t.size(), DeviceGridModel::kMaxTimeHistory);
    EXPECT_GE(h.t.size(), DeviceGridModel::kMaxTimeHistory / 2);
    EXPECT_EQ(h.t.front(), 1000);
    EXPECT_EQ(h.t.back(), 1000 + 0.5 * 10999);
    EXPECT_TRUE(std::is_sorted(h.t.begin(), h.t.end()));
    EXPECT_NEAR(h.util.front(), 100, 1e-9);
    EXPECT_NEAR(h.util.back(), 50, 1e-9);
}

TEST(DeviceGridModelTest, WithoutStepsTheColourIsTheBusyShareOfTheRanksThreads) {
    DeviceGridModel m;
    m.setCpuThreadsPerRank(2);
    m.addSamples({cpuSample(0, 200, 10), cpuSample(1, 100, 10)}, true);
    EXPECT_TRUE(std::isnan(m.data(m.index(0, 0), DeviceGridModel::ComputeShareRole).toDouble()));
    EXPECT_DOUBLE_EQ(m.data(m.index(0, 0), DeviceGridModel::ActivityShareRole).toDouble(), 1.0);
    EXPECT_DOUBLE_EQ(m.data(m.index(0, 1), DeviceGridModel::ActivityShareRole).toDouble(), 0.5);
    EXPECT_EQ(m.data(m.index(0, 1), Qt::BackgroundRole).value<QColor>(), RankActivityPalette::color(0.5));
    m.addSamples({gpu(2, "node1", 0, 80, 10)}, false);
    const QModelIndex g = m.index(1, 0);
    ASSERT_EQ(m.data(g, DeviceGridModel::RankRole).toInt(), 2);
    EXPECT_DOUBLE_EQ(m.data(g, DeviceGridModel::ActivityShareRole).toDouble(), 0.8);
}

TEST(DeviceGridModelTest, MarksTheRankAnActiveAlertNames) {
    DeviceGridModel m;
    m.addSamples({cpuSample(0, 100, 10), cpuSample(1, 100, 10)}, true);
    RunAlert straggler;
    straggler.kind = AlertKind::Straggler;
    straggler.message = "rank 1 on node0: compute 1.82x the median of the others over the last 10 steps";
    straggler.ranks = {1};
    straggler.active = true;
    m.setAlerts({straggler});
    EXPECT_FALSE(m.data(m.index(0, 0), DeviceGridModel::AlertRole).toBool());
    EXPECT_TRUE(m.data(m.index(0, 1), DeviceGridModel::AlertRole).toBool());
    EXPECT_TRUE(m.data(m.index(0, 1), Qt::ToolTipRole).toString().contains(QStringLiteral("straggler: rank 1 on node0")));
    straggler.active = false;
    m.setAlerts({straggler});
    EXPECT_FALSE(m.data(m.index(0, 1), DeviceGridModel::AlertRole).toBool());
}

} // namespace
} // namespace parallax

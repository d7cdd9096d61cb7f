// The device grid on the Live page over a store of many hosts: the flagged hosts' rows first, live
// and once the run has ended, and cells whose text fits their column.
#include "ui/pages/LivePage.h"

#include "tests/ui/live/LiveTestSupport.h"
#include "ui/models/DeviceGridModel.h"
#include "ui/models/StoreWatcher.h"

#include <QFontMetrics>
#include <QHeaderView>
#include <QRegularExpression>
#include <QStyle>
#include <QTableView>

#include <gtest/gtest.h>

#include <chrono>

namespace parallax {
namespace {

using namespace std::chrono_literals;
using test::TempStore;
using test::waitFor;

constexpr int kHosts = 16;
constexpr int kGpus = 8;
constexpr int kHungRank = 42;       // on node5: stops sampling after the first sample
constexpr int kStragglerRank = 115; // on node14: the supervisor's straggler alert names it
constexpr double kT0 = 1.7e9;

std::string hostOf(int rank) { return "node" + std::to_string(rank / kGpus); }

DeviceEvent gpuSample(int rank, double t) {
    DeviceEvent d;
    d.rank = rank;
    d.host = hostOf(rank);
    d.device = rank % kGpus;
    d.util = 60;
    d.mem_used = 56e9;
    d.mem_total = 80e9;
    d.temp_c = 64;
    d.t = t;
    return d;
}

// A running 128-rank run (16 hosts x 8 GPUs) as its supervisor writes it: every rank sampled at
// kT0 and 30 s later but the hung one, and a straggler alert naming rank 115.
int64_t craftFlaggedRun(TempStore& ts) {
    const int64_t run = ts.newRun("flagged", 100, kHosts * kGpus);
    ts.store.markRunning(run, 4242, "node0");
    {
        BatchedWriter w(ts.store, run, 1h);
        RunStartEvent start;
        start.world = kHosts * kGpus;
        start.device = "cuda";
        for (int r = 0; r < start.world; ++r) {
            start.hosts.push_back(hostOf(r));
            start.devices.push_back("NVIDIA H100 #" + std::to_string(r % kGpus));
        }
        w.add(start);
        for (int r = 0; r < start.world; ++r) w.add(gpuSample(r, kT0));
        for (int r = 0; r < start.world; ++r)
            if (r != kHungRank) w.add(gpuSample(r, kT0 + 30));
    }
    RunAlert straggler;
    straggler.kind = AlertKind::Straggler;
    straggler.message = "rank 115 on node14: compute 2.00x the median of the other ranks of pipeline stage 2";
    straggler.ranks = {kStragglerRank};
    straggler.since = straggler.t = kT0 + 25;
    ts.store.setAlert(run, straggler);
    return run;
}

struct ShownGrid {
    StoreWatcher watcher;
    LivePage page{&watcher};
    ShownGrid(const TempStore& ts, int64_t run, QSize size) : watcher(ts.qpath()) {
        watcher.setInterval(20);
        page.resize(size);
        page.show();
        page.setRun(run);
    }
};

QStringList rowHosts(const DeviceGridModel* grid) {
    QStringList hosts;
    for (int r = 0; r < grid->rowCount(); ++r) hosts << grid->headerData(r, Qt::Vertical).toString();
    return hosts;
}

bool loaded(const DeviceGridModel* grid) {
    return grid->rowCount() == kHosts && grid->isAlerted(kStragglerRank) && grid->latest(kHungRank) &&
           grid->lastTime() == kT0 + 30;
}

// The hosts of the straggler and of the hung rank lead the grid while the run is live, and still
// once it has ended; the others follow in rank order.
TEST(DeviceGridPageTest, FlaggedHostsComeFirstLiveAndOnceTheRunEnded) {
    TempStore ts;
    const int64_t run = craftFlaggedRun(ts);
    ShownGrid shown(ts, run, QSize(1200, 900));
    DeviceGridModel* grid = shown.page.deviceModel();
    ASSERT_TRUE(waitFor([&] { return loaded(grid); })) << rowHosts(grid).join(' ').toStdString();
    ASSERT_FALSE(grid->runEnded());
    QStringList expected{QStringLiteral("node5"), QStringLiteral("node14")};
    for (int h = 0; h < kHosts; ++h)
        if (h != 5 && h != 14) expected << QStringLiteral("node%1").arg(h);
    EXPECT_EQ(rowHosts(grid), expected) << rowHosts(grid).join(' ').toStdString();
    EXPECT_EQ(grid->data(grid->index(0, kHungRank % kGpus), DeviceGridModel::RankRole).toInt(), kHungRank);
    EXPECT_TRUE(grid->data(grid->index(0, kHungRank % kGpus), DeviceGridModel::FlaggedRole).toBool());
    EXPECT_FALSE(grid->data(grid->index(0, 0), DeviceGridModel::FlaggedRole).toBool());

    ts.store.finishRun(run, RunState::Failed, 1, "rank 42 stopped");
    ASSERT_TRUE(waitFor([&] { return grid->runEnded(); }));
    EXPECT_EQ(rowHosts(grid), expected) << rowHosts(grid).join(' ').toStdString();
    // What the flagged cells say, ended: why each is first.
    EXPECT_EQ(grid->data(grid->index(0, kHungRank % kGpus)).toString(), QStringLiteral("r42\nsilent 30 s"));
    EXPECT_EQ(grid->data(grid->index(1, kStragglerRank % kGpus)).toString(), QStringLiteral("r115\n60%\nstraggler"));
    EXPECT_TRUE(grid->data(grid->index(0, kHungRank % kGpus), Qt::ToolTipRole).toString().contains(QStringLiteral("did the rank hang?")));

    // Shown afresh, as the console opens an ended run.
    ShownGrid again(ts, run, QSize(1200, 900));
    DeviceGridModel* reopened = again.page.deviceModel();
    ASSERT_TRUE(waitFor([&] { return loaded(reopened) && reopened->runEnded(); })) << rowHosts(reopened).join(' ').toStdString();
    EXPECT_EQ(rowHosts(reopened), expected) << rowHosts(reopened).join(' ').toStdString();
}

// At the Live page's size in a 1280x720 window, every line of a cell fits its column and the
// flagged row is tall enough for its lines: no "co..." or "end...".
TEST(DeviceGridPageTest, CellsFitTheirColumnAt1280x720) {
    TempStore ts;
    const int64_t run = craftFlaggedRun(ts);
    ts.store.finishRun(run, RunState::Failed, 1, "rank 42 stopped");
    // The page's share of a 1280x720 window, less the side bar, menu and status bar.
    ShownGrid shown(ts, run, QSize(1100, 670));
    DeviceGridModel* grid = shown.page.deviceModel();
    ASSERT_TRUE(waitFor([&] { return loaded(grid) && grid->runEnded(); }));
    auto* view = shown.page.findChild<QTableView*>();
    ASSERT_NE(view, nullptr);
    ASSERT_TRUE(waitFor([&] { return view->visualRect(grid->index(0, kGpus - 1)).isValid(); }));
    QCoreApplication::processEvents();
    const QFontMetrics fm(view->font());
    const int margin = 2 * (view->style()->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, view) + 1);
    for (int c = 0; c < grid->columnCount(); ++c) {
        for (int r : {0, 1, 2}) {
            const QModelIndex cell = grid->index(r, c);
            const QRect rect = view->visualRect(cell);
            const QString text = cell.data(Qt::DisplayRole).toString();
            const QString where = QStringLiteral("row %1 column %2 (%3 x %4 px): ").arg(r).arg(c).arg(rect.width()).arg(rect.height());
            // Lines may wrap between words, but no word is cut, and the wrapped lines fit the row.
            for (const QString& word : text.split(QRegularExpression(QStringLiteral("\\s+")), Qt::SkipEmptyParts))
                EXPECT_LE(fm.horizontalAdvance(word), rect.width() - margin) << (where + word).toStdString();
            const QRect wrapped = fm.boundingRect(QRect(0, 0, rect.width() - margin, 10000), Qt::TextWordWrap, text);
            EXPECT_LE(wrapped.height(), rect.height()) << (where + text).toStdString();
        }
    }
    EXPECT_EQ(grid->data(grid->index(2, 3)).toString(), QStringLiteral("r3\n60%"));
}

} // namespace
} // namespace parallax

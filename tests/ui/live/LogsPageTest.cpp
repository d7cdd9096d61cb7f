#include "ui/pages/LogsPage.h"

#include "tests/ui/live/LiveTestSupport.h"
#include "ui/models/LogTableModel.h"
#include "ui/models/StoreWatcher.h"

#include <QLabel>
#include <QListWidget>
#include <QScrollBar>
#include <QTableView>

#include <gtest/gtest.h>

#include <chrono>

namespace parallax {
namespace {

using namespace std::chrono_literals;
using test::logLine;
using test::TempStore;
using test::waitFor;

class LogsPageTest : public ::testing::Test {
protected:
    TempStore ts;
    int64_t run = ts.newRun("logs-page", 100, 4);
    StoreWatcher watcher{ts.qpath()};
    LogsPage page{&watcher};

    void SetUp() override {
        watcher.setInterval(20);
        page.resize(1000, 600);
        page.show();
    }

    void write(int first, int count, int errorAt = -1) {
        BatchedWriter w(ts.store, run, 1h, 1000000);
        for (int i = first; i < first + count; ++i) {
            const std::string msg = "step " + std::to_string(i) + (i % 10 == 0 ? " allreduce timeout" : " ok");
            w.add(logLine(i % 4, i == errorAt ? "error" : "info", msg, 1.7e9 + i));
        }
    }

    // The rows the view shows on screen, once their pages arrived.
    std::vector<int> visibleRows() {
        QTableView* v = page.view();
        const int top = v->rowAt(0);
        int bottom = v->rowAt(v->viewport()->height() - 1);
        if (bottom < 0) bottom = page.model()->rowCount() - 1;
        std::vector<int> rows;
        for (int r = top; r >= 0 && r <= bottom; ++r) rows.push_back(r);
        return rows;
    }

    bool visibleLoaded() {
        for (int r : visibleRows()) {
            page.model()->data(page.model()->index(r, 0)); // as painting would
            if (!page.model()->isLoaded(r)) return false;
        }
        return true;
    }
};

TEST_F(LogsPageTest, ARankFilterShowsOnlyThatRanksRows) {
    write(0, 400);
    page.setRun(run);
    RunStartEvent start;
    start.world = 4;
    start.hosts = {"a", "a", "b", "b"};
    {
        BatchedWriter w(ts.store, run, 1h);
        w.add(start);
    }
    // The rank list fills from the run's record and run_start: the supervisor, then 4 ranks.
    auto* ranks = page.findChild<QListWidget*>();
    ASSERT_TRUE(ranks);
    ASSERT_TRUE(waitFor([&] { return ranks->count() == 5 && ranks->item(3)->text().contains(QStringLiteral("b")); }));

    // Checking rank 2 in the list filters the table.
    ranks->item(3)->setCheckState(Qt::Checked);
    EXPECT_EQ(page.rankFilter(), std::vector<int>{2});
    ASSERT_TRUE(waitFor([&] { return page.model()->isReady() && page.model()->rowCount() == 100; }));
    ASSERT_TRUE(waitFor([&] { return visibleLoaded(); }));
    for (int r : visibleRows()) {
        EXPECT_EQ(page.model()->data(page.model()->index(r, LogTableModel::RankColumn)).toString(), QStringLiteral("2"));
    }
    // Through the API as well, for several ranks.
    page.setRankFilter({0, 3});
    ASSERT_TRUE(waitFor([&] { return page.model()->isReady() && page.model()->rowCount() == 200; }));
    EXPECT_EQ(ranks->item(1)->checkState(), Qt::Checked);
    EXPECT_EQ(ranks->item(3)->checkState(), Qt::Unchecked);
}

// An alert about a rank opens its lines beside the supervisor's, at every level: the supervisor's
// own line about the hang (a warning) stays in view whatever level filter was left set.
TEST_F(LogsPageTest, ARanksLinesOpenWithTheSupervisorsAtEveryLevel) {
    write(0, 40);
    {
        BatchedWriter w(ts.store, run, 1h, 1000000);
        w.add(logLine(-1, "warn", "hang: no step for 41 s; rank 2 is silent", 1.7e9 + 50));
    }
    page.setRun(run);
    page.setMinLevel(QStringLiteral("error"));
    ASSERT_TRUE(waitFor([&] { return page.model()->isReady() && page.model()->rowCount() == 0; }));

    page.showRankWithSupervisor(2);
    EXPECT_EQ(page.rankFilter(), (std::vector<int>{-1, 2}));
    ASSERT_TRUE(waitFor([&] { return page.model()->isReady() && page.model()->rowCount() == 11; }))
        << page.model()->rowCount();
    int rankTwo = 0, hangLines = 0;
    for (int r = 0; r < page.model()->rowCount(); ++r) {
        page.model()->data(page.model()->index(r, 0));
        ASSERT_TRUE(waitFor([&] { return page.model()->isLoaded(r); }));
        rankTwo += page.model()->data(page.model()->index(r, LogTableModel::RankColumn)).toString() == QStringLiteral("2");
        hangLines += page.model()->data(page.model()->index(r, LogTableModel::MessageColumn)).toString().startsWith(
            QStringLiteral("hang: "));
    }
    EXPECT_EQ(rankTwo, 10);
    EXPECT_EQ(hangLines, 1);
}

TEST_F(LogsPageTest, SearchUsesTheFullTextIndex) {
    write(0, 500);
    page.setRun(run);
    page.setSearchText(QStringLiteral("allreduce timeout"));
    ASSERT_TRUE(waitFor([&] { return page.model()->isReady() && page.model()->rowCount() == 50; }));
    ASSERT_TRUE(waitFor([&] { return visibleLoaded(); }));
    for (int r : visibleRows()) {
        EXPECT_TRUE(page.model()->data(page.model()->index(r, LogTableModel::MessageColumn))
                        .toString()
                        .contains(QStringLiteral("allreduce timeout")));
    }
    page.setSearchText(QString());
    ASSERT_TRUE(waitFor([&] { return page.model()->isReady() && page.model()->rowCount() == 500; }));
}

TEST_F(LogsPageTest, FollowModeKeepsTheNewestLineInViewUntilTheUserScrollsUp) {
    write(0, 300);
    page.setRun(run);
    ASSERT_TRUE(page.follow());
    ASSERT_TRUE(waitFor([&] { return page.model()->rowCount() == 300; }));
    QScrollBar* bar = page.view()->verticalScrollBar();
    ASSERT_TRUE(waitFor([&] { return bar->maximum() > 0 && bar->value() == bar->maximum(); }));

    // New lines arrive: they are appended and the view follows them.
    write(300, 50);
    ASSERT_TRUE(waitFor([&] { return page.model()->rowCount() == 350; }));
    ASSERT_TRUE(waitFor([&] { return bar->value() == bar->maximum() && visibleLoaded(); }));
    const std::vector<int> rows = visibleRows();
    ASSERT_FALSE(rows.empty());
    EXPECT_EQ(rows.back(), 349);
    EXPECT_EQ(page.model()->rowAt(349)->message, "step 349 ok");

    // The user scrolls up: following pauses and new lines do not move the view.
    bar->setValue(10);
    EXPECT_FALSE(page.follow());
    write(350, 50);
    ASSERT_TRUE(waitFor([&] { return page.model()->rowCount() == 400; }));
    QTest::qWait(50);
    EXPECT_EQ(bar->value(), 10);

    // Back at the end, it follows again.
    bar->setValue(bar->maximum());
    EXPECT_TRUE(page.follow());
    write(400, 10);
    ASSERT_TRUE(waitFor([&] { return page.model()->rowCount() == 410 && bar->value() == bar->maximum(); }));
}

TEST_F(LogsPageTest, JumpsToTheFirstError) {
    write(0, 2500, 1777);
    page.setRun(run);
    ASSERT_TRUE(waitFor([&] { return page.model()->rowCount() == 2500; }));
    page.jumpToFirstError();
    EXPECT_FALSE(page.follow());
    ASSERT_TRUE(waitFor([&] {
        const QModelIndexList sel = page.view()->selectionModel()->selectedRows();
        return sel.size() == 1 && sel.first().row() == 1777;
    }));
    ASSERT_TRUE(waitFor([&] { return visibleLoaded(); }));
    const std::vector<int> rows = visibleRows();
    EXPECT_NE(std::find(rows.begin(), rows.end(), 1777), rows.end());
    EXPECT_EQ(page.model()->data(page.model()->index(1777, LogTableModel::LevelColumn)).toString(), QStringLiteral("error"));
}

// Issue 19: the Logs page did not say whose logs it showed.
TEST_F(LogsPageTest, SaysWhoseLogsItShows) {
    EXPECT_TRUE(page.titleLabel()->text().startsWith(QStringLiteral("No run chosen"))) << page.titleLabel()->text().toStdString();
    page.setRun(run);
    ASSERT_TRUE(waitFor([&] { return page.titleLabel()->text() == QStringLiteral("Logs of run #%1 logs-page (queued)").arg(run); }))
        << page.titleLabel()->text().toStdString();
    ts.store.markRunning(run, 1, "here");
    ASSERT_TRUE(waitFor([&] { return page.titleLabel()->text() == QStringLiteral("Logs of run #%1 logs-page (running)").arg(run); }))
        << page.titleLabel()->text().toStdString();
    ts.store.finishRun(run, RunState::Failed, 1, "rank 1 exited with code 1");
    ASSERT_TRUE(waitFor([&] { return page.titleLabel()->text().endsWith(QStringLiteral("(failed)")); }))
        << page.titleLabel()->text().toStdString();
    EXPECT_EQ(page.titleLabel()->toolTip(), QStringLiteral("rank 1 exited with code 1"));

    // Another run: its own title at once, not the last one's.
    const int64_t other = ts.newRun("second", 10, 2);
    page.setRun(other);
    EXPECT_EQ(page.titleLabel()->text(), QStringLiteral("Logs of run #%1").arg(other));
    ASSERT_TRUE(waitFor([&] { return page.titleLabel()->text() == QStringLiteral("Logs of run #%1 second (queued)").arg(other); }))
        << page.titleLabel()->text().toStdString();
}

} // namespace
} // namespace parallax

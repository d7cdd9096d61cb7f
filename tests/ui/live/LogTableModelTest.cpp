#include "ui/models/LogTableModel.h"

#include "tests/ui/live/LiveTestSupport.h"
#include "core/launch/OutputRouter.h"
#include "core/telemetry/TelemetryCodec.h"
#include "ui/models/StoreWatcher.h"

#include <QAbstractItemModelTester>
#include <QSignalSpy>

#include <gtest/gtest.h>

#include <chrono>

namespace parallax {
namespace {

using namespace std::chrono_literals;
using test::logLine;
using test::TempStore;
using test::waitFor;

const char* levelOf(int i) {
    if (i % 97 == 0) return "error";
    if (i % 13 == 0) return "warn";
    if (i % 5 == 0) return "debug";
    return "info";
}

// Lines of 4 ranks and the supervisor, some mentioning NCCL.
void writeLines(RunStore& store, int64_t run, int first, int count) {
    BatchedWriter w(store, run, 1h, 1000000);
    for (int i = first; i < first + count; ++i) {
        const int rank = i % 5 - 1;
        std::string msg = "line " + std::to_string(i);
        if (i % 7 == 0) msg += " NCCL INFO ring " + std::to_string(i % 3);
        w.add(logLine(rank, levelOf(i), msg, 1.7e9 + i * 0.001));
    }
}

// Asks for every row in [first, last] and waits until all are loaded.
bool loadRows(LogTableModel& model, int first, int last) {
    return waitFor([&] {
        bool all = true;
        for (int r = first; r <= last; ++r) {
            if (!model.isLoaded(r)) {
                all = false;
                model.data(model.index(r, LogTableModel::MessageColumn));
                r = (r / LogTableModel::kPageRows + 1) * LogTableModel::kPageRows - 1; // next page
            }
        }
        return all;
    });
}

class LogTableModelTest : public ::testing::Test {
protected:
    TempStore ts;
    int64_t run = ts.newRun("logs", 100, 4);
    std::unique_ptr<StoreWatcher> watcher = std::make_unique<StoreWatcher>(ts.qpath());

    void SetUp() override { watcher->setInterval(20); }

    void expectRowsMatch(LogTableModel& model, const LogQuery& q) {
        const std::vector<LogRow> expected = ts.store.logs(run, q);
        ASSERT_EQ(model.rowCount(), static_cast<int>(expected.size()));
        ASSERT_TRUE(loadRows(model, 0, model.rowCount() - 1));
        for (size_t i = 0; i < expected.size(); ++i) {
            const auto row = model.rowAt(static_cast<int>(i));
            ASSERT_TRUE(row) << i;
            ASSERT_EQ(row->id, expected[i].id) << "row " << i;
            ASSERT_EQ(row->message, expected[i].message);
        }
    }
};

TEST_F(LogTableModelTest, CountsWithLogCountAndPagesRowsInStoreOrder) {
    writeLines(ts.store, run, 0, 5500);
    LogTableModel model(watcher.get());
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
    model.setRun(run);
    ASSERT_TRUE(waitFor([&] { return model.isReady(); }));
    EXPECT_EQ(model.rowCount(), ts.store.logCount(run));
    // Nothing is read before a view asks.
    EXPECT_FALSE(model.isLoaded(4000));
    expectRowsMatch(model, LogQuery());

    const QModelIndex i = model.index(97, LogTableModel::LevelColumn);
    EXPECT_EQ(model.data(i).toString(), QStringLiteral("error"));
    EXPECT_EQ(model.data(i, Qt::ForegroundRole).value<QColor>(), LogTableModel::levelColor(QStringLiteral("error")));
    EXPECT_EQ(model.data(model.index(0, LogTableModel::RankColumn)).toString(), QStringLiteral("-"));
    EXPECT_EQ(model.data(model.index(1, LogTableModel::RankColumn)).toString(), QStringLiteral("0"));
}

TEST_F(LogTableModelTest, FiltersByRanksLevelAndFullText) {
    writeLines(ts.store, run, 0, 3000);
    LogTableModel model(watcher.get());
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
    model.setRun(run);

    LogQuery q;
    q.ranks = {3, 1};
    model.setQuery(q);
    ASSERT_TRUE(waitFor([&] { return model.isReady(); }));
    expectRowsMatch(model, q);
    for (int r = 0; r < model.rowCount(); ++r) {
        const int rank = model.data(model.index(r, 0), LogTableModel::RankNumberRole).toInt();
        ASSERT_TRUE(rank == 1 || rank == 3) << r;
    }

    q.min_level = "warn";
    model.setQuery(q);
    ASSERT_TRUE(waitFor([&] { return model.isReady(); }));
    expectRowsMatch(model, q);

    LogQuery text;
    text.match = "nccl ring";
    model.setQuery(text);
    ASSERT_TRUE(waitFor([&] { return model.isReady(); }));
    EXPECT_EQ(model.rowCount(), 3000 / 7 + 1);
    expectRowsMatch(model, text);
    for (int r = 0; r < model.rowCount(); ++r) {
        ASSERT_TRUE(model.rowAt(r)->message.find("NCCL INFO ring") != std::string::npos);
    }
}

TEST_F(LogTableModelTest, AppendsLinesAsTheyArriveAndStaysConsistentWhileDoingSo) {
    LogTableModel model(watcher.get());
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
    QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
    LogQuery q;
    q.ranks = {0, 2};
    model.setQuery(q);
    model.setRun(run);
    ASSERT_TRUE(waitFor([&] { return model.isReady(); }));
    EXPECT_EQ(model.rowCount(), 0);
    int written = 0;
    for (int batch = 0; batch < 12; ++batch) {
        writeLines(ts.store, run, written, 250);
        written += 250;
        const int expected = static_cast<int>(ts.store.logCount(run, q));
        ASSERT_TRUE(waitFor([&] { return model.rowCount() == expected; })) << model.rowCount() << " of " << expected;
        // The view looks at the newest rows, as in follow mode.
        ASSERT_TRUE(loadRows(model, std::max(0, expected - 40), expected - 1));
    }
    EXPECT_GE(inserted.count(), 12);
    expectRowsMatch(model, q);
}

TEST_F(LogTableModelTest, FindsTheFirstErrorUnderTheFilter) {
    writeLines(ts.store, run, 0, 4000);
    LogTableModel model(watcher.get());
    model.setRun(run);
    LogQuery q;
    q.ranks = {2};
    model.setQuery(q);
    ASSERT_TRUE(waitFor([&] { return model.isReady(); }));
    QSignalSpy found(&model, &LogTableModel::firstFound);
    model.findFirst();
    ASSERT_TRUE(waitFor([&] { return found.count() == 1; }));
    const int row = found.first().first().toInt();
    const std::vector<LogRow> rows = ts.store.logs(run, q);
    int expected = -1;
    for (size_t i = 0; i < rows.size() && expected < 0; ++i) {
        if (rows[i].level == LogLevel::Error) expected = static_cast<int>(i);
    }
    ASSERT_GE(expected, 0);
    EXPECT_EQ(row, expected);

    // No error at all: -1.
    LogQuery none;
    none.match = "no-such-words-anywhere";
    model.setQuery(none);
    ASSERT_TRUE(waitFor([&] { return model.isReady(); }));
    model.findFirst();
    ASSERT_TRUE(waitFor([&] { return found.count() == 2; }));
    EXPECT_EQ(found.last().first().toInt(), -1);
}

TEST_F(LogTableModelTest, EvictedPagesAreReadAgainCorrectly) {
    const int lines = (LogTableModel::kMaxCachedPages + 6) * LogTableModel::kPageRows;
    writeLines(ts.store, run, 0, lines);
    LogTableModel model(watcher.get());
    model.setRun(run);
    ASSERT_TRUE(waitFor([&] { return model.isReady(); }));
    ASSERT_EQ(model.rowCount(), lines);
    auto check = [&](int row) {
        ASSERT_TRUE(loadRows(model, row, row));
        LogQuery at;
        at.offset = row;
        at.limit = 1;
        EXPECT_EQ(model.rowAt(row)->id, ts.store.logs(run, at).front().id) << row;
    };
    for (int p = 0; p < lines / LogTableModel::kPageRows; ++p) check(p * LogTableModel::kPageRows + 999);
    EXPECT_FALSE(model.isLoaded(0)); // the oldest pages were dropped
    check(0);
    check(lines - 1);
}

TEST_F(LogTableModelTest, ASearchTheStoreCannotParseIsReported) {
    writeLines(ts.store, run, 0, 10);
    LogTableModel model(watcher.get());
    QSignalSpy failed(&model, &LogTableModel::queryFailed);
    model.setRun(run);
    LogQuery q;
    q.match = "nccl AND";
    model.setQuery(q);
    ASSERT_TRUE(waitFor([&] { return failed.count() >= 1; }));
    EXPECT_TRUE(failed.first().first().toString().contains(QStringLiteral("log search")))
        << failed.first().first().toString().toStdString();
    EXPECT_EQ(model.rowCount(), 0);
}

TEST(LogTableModelText, ARunEndWithoutItsStepSaysNoStep) {
    LogRow end = test::logLine(0, "error", "run ended: failed at step 0: rank 1: out of memory");
    end.stream = "telemetry";
    EXPECT_EQ(LogTableModel::messageText(end).toStdString(), "run ended: failed: rank 1: out of memory");
    end.message = "run ended: failed at step 0";
    EXPECT_EQ(LogTableModel::messageText(end).toStdString(), "run ended: failed");
    // A known step stays, and so does a rank's own line that happens to read alike.
    end.message = "run ended: succeeded at step 149";
    EXPECT_EQ(LogTableModel::messageText(end).toStdString(), "run ended: succeeded at step 149");
    end.message = "run ended: failed at step 0: x";
    end.stream = "stdout";
    EXPECT_EQ(LogTableModel::messageText(end).toStdString(), "run ended: failed at step 0: x");
}

// Issue 19: rank 1's Host cells were blank. Its first lines (a `log` event) come before rank 0's
// run_start, and the writer took hosts only from run_start.
TEST_F(LogTableModelTest, EveryRankOfALocalRunHasItsHostEvenBeforeRunStart) {
    const auto event = [](const TelemetryEvent& e) { return encodeEvent(e) + "\n"; }; // with its prefix
    LogEvent early;
    early.rank = 1;
    early.message = "rank 1 on this host: cpu";
    early.t = 1.7e9;
    RunStartEvent start;
    start.world = 2;
    start.hosts = {"thishost", "thishost"};
    LogEvent late = early;
    late.rank = 0;
    late.message = "rank 0 after run_start";
    {
        BatchedWriter w(ts.store, run, 1h, 1000000);
        OutputRouter router(w, LauncherFormat::OpenMpi, "thishost", true);
        const std::string out = "[1,1]<stdout>:" + event(early) + "[1,1]<stdout>:plain text of rank 1\n" +
                                "[1,0]<stdout>:" + event(start) + "[1,0]<stdout>:" + event(late);
        router.append(OutputStream::Stdout, out.data(), out.size(), 1.7e9);
        router.finish(1.7e9);
    }
    const std::vector<LogRow> rows = ts.store.logs(run, LogQuery{});
    ASSERT_EQ(rows.size(), 3u);
    for (const LogRow& r : rows) EXPECT_EQ(r.host, "thishost") << r.rank << " " << r.message;
    EXPECT_EQ(rows[0].stream, "telemetry");
    EXPECT_EQ(rows[0].message, "rank 1 on this host: cpu");
    EXPECT_EQ(rows[1].message, "plain text of rank 1");
    EXPECT_EQ(rows[2].message, "rank 0 after run_start");
}

// Lines stored without a host (by a supervisor of before, or on hosts before run_start) show the
// host the run knows for their rank.
TEST_F(LogTableModelTest, ALineWithoutAHostShowsItsRanksHostFromTheRun) {
    {
        BatchedWriter w(ts.store, run, 1h, 1000000);
        for (int rank : {0, 1, 2, -1}) {
            LogRow r = logLine(rank, "info", "line of " + std::to_string(rank));
            r.host.clear();
            w.add(r);
        }
        RunStartEvent start;
        start.world = 4;
        start.hosts = {"node0", "node1", "node2", "node3"};
        w.add(start);
    }
    LogTableModel model(watcher.get());
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
    model.setRun(run);
    ASSERT_TRUE(waitFor([&] { return model.isReady() && model.rowCount() == 4; }));
    ASSERT_TRUE(loadRows(model, 0, 3));
    const auto host = [&](int row) { return model.data(model.index(row, LogTableModel::HostColumn)).toString(); };
    ASSERT_TRUE(waitFor([&] { return host(1) == QStringLiteral("node1"); })) << host(1).toStdString();
    EXPECT_EQ(host(0), QStringLiteral("node0"));
    EXPECT_EQ(host(2), QStringLiteral("node2"));
    EXPECT_EQ(host(3), QString()); // the supervisor has no rank's host
    EXPECT_EQ(model.rowAt(1)->host, ""); // the row itself is as stored
}

// A run on one machine that failed before run_start: its one host is every rank's.
TEST_F(LogTableModelTest, ARunOnOneHostGivesItToEveryRank) {
    {
        BatchedWriter w(ts.store, run, 1h, 1000000);
        LogRow r = logLine(1, "error", "died before run_start");
        r.host.clear();
        w.add(r);
    }
    RunStartEvent one;
    one.world = 2;
    one.hosts = {"solo"};
    ts.store.setRunStart(run, one); // records the run's hosts: ["solo"]
    LogTableModel model(watcher.get());
    model.setRun(run);
    ASSERT_TRUE(waitFor([&] { return model.isReady() && model.rowCount() == 1; }));
    ASSERT_TRUE(loadRows(model, 0, 0));
    ASSERT_TRUE(waitFor([&] { return model.data(model.index(0, LogTableModel::HostColumn)).toString() == QStringLiteral("solo"); }))
        << model.data(model.index(0, LogTableModel::HostColumn)).toString().toStdString();
}

} // namespace
} // namespace parallax

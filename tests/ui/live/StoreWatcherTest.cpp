#include "ui/models/StoreWatcher.h"

#include "tests/support/Process.h"
#include "tests/support/StoreDamage.h"
#include "tests/ui/live/LiveTestSupport.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSignalSpy>
#include <QThread>

#include <gtest/gtest.h>

#include <chrono>
#include <map>

namespace parallax {
namespace {

using namespace std::chrono_literals;
using test::logLine;
using test::stepEvent;
using test::TempStore;
using test::waitFor;

// Everything the watcher emitted for one run, as a page would keep it.
struct Received {
    std::vector<StepEvent> metrics;
    std::vector<DeviceEvent> devices;
    std::vector<SpanEvent> spans;
    std::vector<LogRow> logs;
    std::vector<RunRecord> records;
    int metricResets = 0;
    std::vector<std::vector<RunRecord>> runLists;

    void attach(StoreWatcher& w, int64_t run) {
        QObject::connect(&w, &StoreWatcher::metricsAdded, [this, run](qint64 r, const std::vector<StepEvent>& rows, bool reset) {
            if (r != run) return;
            if (reset) {
                metrics.clear();
                ++metricResets;
            }
            metrics.insert(metrics.end(), rows.begin(), rows.end());
        });
        QObject::connect(&w, &StoreWatcher::deviceSamplesAdded, [this, run](qint64 r, const std::vector<DeviceEvent>& rows, bool reset) {
            if (r != run) return;
            if (reset) devices.clear();
            devices.insert(devices.end(), rows.begin(), rows.end());
        });
        QObject::connect(&w, &StoreWatcher::spansAdded, [this, run](qint64 r, const std::vector<SpanEvent>& rows, bool reset) {
            if (r != run) return;
            if (reset) spans.clear();
            spans.insert(spans.end(), rows.begin(), rows.end());
        });
        QObject::connect(&w, &StoreWatcher::logsAdded, [this, run](qint64 r, const std::vector<LogRow>& rows) {
            if (r == run) logs.insert(logs.end(), rows.begin(), rows.end());
        });
        QObject::connect(&w, &StoreWatcher::runChanged, [this, run](const RunRecord& rec) {
            if (rec.id == run) records.push_back(rec);
        });
        QObject::connect(&w, &StoreWatcher::runsChanged, [this](const std::vector<RunRecord>& runs) {
            runLists.push_back(runs);
        });
    }
};

SpanEvent span(int rank, int64_t step, double start) {
    SpanEvent s;
    s.rank = rank;
    s.step = step;
    s.kind = "F";
    s.start = start;
    s.end = start + 0.01;
    return s;
}

DeviceEvent sample(int rank, double t) {
    DeviceEvent e;
    e.rank = rank;
    e.host = "node0";
    e.device = rank;
    e.util = 80;
    e.t = t;
    return e;
}

TEST(StoreWatcherTest, PicksUpRowsAnotherConnectionWrites) {
    TempStore ts;
    const int64_t run = ts.newRun("watched");
    ts.store.markRunning(run, 4242, "node0");
    {
        BatchedWriter early(ts.store, run, 1h);
        early.add(stepEvent(0, 2.0, 1.7e9));
        early.add(logLine(0, "info", "before the watch"));
    }

    StoreWatcher watcher(ts.qpath());
    watcher.setInterval(20);
    Received got;
    got.attach(watcher, run);
    watcher.watch(run);
    EXPECT_TRUE(watcher.isWatching(run));

    // History first: the metrics written before the watch, with reset.
    ASSERT_TRUE(waitFor([&] { return got.metricResets == 1 && got.metrics.size() == 1; }));
    ASSERT_FALSE(got.records.empty());
    EXPECT_EQ(got.records.back().state, RunState::Running);
    EXPECT_TRUE(got.logs.empty()); // log history is paged by the log model, not sent

    BatchedWriter writer(ts.store, run, 1h);
    for (int i = 1; i <= 50; ++i) writer.add(stepEvent(i, 2.0 - i * 0.01, 1.7e9 + i));
    for (int r = 0; r < 2; ++r) writer.add(sample(r, 1.7e9 + 1));
    writer.add(span(0, 10, 1.0));
    writer.add(span(1, 10, 1.1));
    writer.add(span(0, 20, 2.0));
    for (int i = 0; i < 30; ++i) writer.add(logLine(i % 4, "info", "line " + std::to_string(i)));
    writer.flush();

    ASSERT_TRUE(waitFor([&] { return got.metrics.size() == 51 && got.logs.size() == 30 && got.devices.size() == 2; }));
    for (size_t i = 0; i < got.metrics.size(); ++i) EXPECT_EQ(got.metrics[i].step, static_cast<int64_t>(i));
    EXPECT_EQ(got.logs.front().message, "line 0");
    EXPECT_EQ(got.logs.back().message, "line 29");
    // The newest span step may still be arriving from other ranks: held back while running.
    ASSERT_TRUE(waitFor([&] { return got.spans.size() == 2; }));
    EXPECT_EQ(got.spans.front().step, 10);

    // A later step releases step 20; the run's end releases the rest.
    writer.add(span(0, 30, 3.0));
    writer.flush();
    ASSERT_TRUE(waitFor([&] { return got.spans.size() == 3; }));
    EXPECT_EQ(got.spans.back().step, 20);
    ts.store.finishRun(run, RunState::Succeeded, 0, "done");
    ASSERT_TRUE(waitFor([&] { return got.spans.size() == 4 && got.records.back().state == RunState::Succeeded; }));

    // Nothing is sent twice.
    writer.add(logLine(1, "warn", "one more"));
    writer.flush();
    ASSERT_TRUE(waitFor([&] { return got.logs.size() == 31; }));
    QTest::qWait(100);
    EXPECT_EQ(got.logs.size(), 31u);
    EXPECT_EQ(got.metrics.size(), 51u);
    EXPECT_EQ(got.devices.size(), 2u);
}

TEST(StoreWatcherTest, DeliversEachChangeOfAHostsStatus) {
    TempStore ts;
    const int64_t run = ts.newRun("on-hosts");
    ts.store.markRunning(run, 4242, "node0");
    StoreWatcher w(ts.qpath());
    w.setInterval(10);
    std::vector<std::vector<HostStatus>> received;
    QObject::connect(&w, &StoreWatcher::hostStatusesChanged, [&](qint64 r, const std::vector<HostStatus>& rows) {
        if (r == run) received.push_back(rows);
    });
    w.watch(run);
    // A run without host rows: an empty list, once.
    ASSERT_TRUE(waitFor([&] { return received.size() == 1; }));
    EXPECT_TRUE(received.back().empty());

    HostStatus node1;
    node1.host = "node1";
    node1.state = HostState::Answering;
    node1.latency_ms = 3;
    node1.t = 1.7e9;
    HostStatus node2 = node1;
    node2.host = "node2";
    ts.store.setHostStatus(run, node1);
    ts.store.setHostStatus(run, node2);
    ASSERT_TRUE(waitFor([&] { return !received.back().empty() && received.back().size() == 2; }));

    node2.state = HostState::Silent;
    node2.detail = "silent for 12 s (ssh: Connection refused)";
    node2.t += 12;
    ts.store.setHostStatus(run, node2);
    ASSERT_TRUE(waitFor([&] { return received.back().size() == 2 && received.back()[1].state == HostState::Silent; }));
    EXPECT_EQ(received.back()[1].detail, "silent for 12 s (ssh: Connection refused)");
    EXPECT_EQ(received.back()[0].state, HostState::Answering);

    // Rows of other tables do not send the hosts again.
    const size_t sent = received.size();
    ts.store.insertMetric(run, stepEvent(0, 1.0, 1.7e9));
    QTest::qWait(200);
    EXPECT_EQ(received.size(), sent);
}

TEST(StoreWatcherTest, DeviceSamplesWrittenLateForAnEarlierTimeAreNotLost) {
    TempStore ts;
    const int64_t run = ts.newRun();
    StoreWatcher watcher(ts.qpath());
    watcher.setInterval(20);
    Received got;
    got.attach(watcher, run);
    watcher.watch(run);
    BatchedWriter writer(ts.store, run, 1h);
    writer.add(sample(0, 100.5));
    writer.flush();
    ASSERT_TRUE(waitFor([&] { return got.devices.size() == 1; }));
    // Rank 1's sample of an earlier moment arrives through a slower pipe.
    writer.add(sample(1, 100.2));
    writer.flush();
    ASSERT_TRUE(waitFor([&] { return got.devices.size() == 2; }));
    EXPECT_EQ(got.devices.back().rank, 1);
    writer.add(sample(0, 101.0));
    writer.flush();
    ASSERT_TRUE(waitFor([&] { return got.devices.size() == 3; }));
    QTest::qWait(80);
    EXPECT_EQ(got.devices.size(), 3u);
}

TEST(StoreWatcherTest, RunsStartedElsewhereAppearInTheRunsList) {
    TempStore ts;
    ts.newRun("first");
    StoreWatcher watcher(ts.qpath());
    watcher.setInterval(20);
    Received got;
    got.attach(watcher, 0);
    ASSERT_TRUE(waitFor([&] { return !got.runLists.empty() && got.runLists.back().size() == 1; }));
    // A run created by another process (here another connection), as parallax-cli would.
    RunStore cli(ts.path);
    NewRun r;
    r.name = "from-a-terminal";
    cli.createRun(r);
    ASSERT_TRUE(waitFor([&] { return got.runLists.back().size() == 2; }));
    bool found = false;
    for (const RunRecord& rec : got.runLists.back()) found = found || rec.name == "from-a-terminal";
    EXPECT_TRUE(found);
    // An unchanged list is not sent again.
    const size_t lists = got.runLists.size();
    QTest::qWait(StoreWatcher::kRunsIntervalMs + 200);
    EXPECT_EQ(got.runLists.size(), lists);
}

TEST(StoreWatcherTest, ALogBurstLargerThanOnePollArrivesWhole) {
    TempStore ts;
    const int64_t run = ts.newRun();
    StoreWatcher watcher(ts.qpath());
    watcher.setInterval(20);
    Received got;
    got.attach(watcher, run);
    watcher.watch(run);
    ASSERT_TRUE(waitFor([&] { return got.metricResets == 1; }));
    const int n = static_cast<int>(StoreWatcher::kMaxLogRowsPerPoll) * 2 + 123;
    {
        BatchedWriter writer(ts.store, run, 1h, 100000);
        for (int i = 0; i < n; ++i) writer.add(logLine(0, "info", "burst " + std::to_string(i)));
    }
    ASSERT_TRUE(waitFor([&] { return got.logs.size() == static_cast<size_t>(n); }));
    for (int i = 1; i < n; ++i) ASSERT_GT(got.logs[static_cast<size_t>(i)].id, got.logs[static_cast<size_t>(i - 1)].id);
}

TEST(StoreWatcherTest, EveryWatchResendsHistoryAndUnwatchIsCounted) {
    TempStore ts;
    const int64_t run = ts.newRun();
    {
        BatchedWriter writer(ts.store, run, 1h);
        for (int i = 0; i < 5; ++i) writer.add(stepEvent(i, 1, i));
    }
    StoreWatcher watcher(ts.qpath());
    watcher.setInterval(20);
    Received got;
    got.attach(watcher, run);
    watcher.watch(run);
    ASSERT_TRUE(waitFor([&] { return got.metricResets == 1; }));
    watcher.watch(run); // a second page subscribes
    ASSERT_TRUE(waitFor([&] { return got.metricResets == 2; }));
    EXPECT_EQ(got.metrics.size(), 5u);
    watcher.unwatch(run);
    EXPECT_TRUE(watcher.isWatching(run));
    watcher.unwatch(run);
    EXPECT_FALSE(watcher.isWatching(run));
}

TEST(StoreWatcherTest, ALogWatchNeitherResendsHistoryNorLosesLinesAcrossLaterWatches) {
    TempStore ts;
    const int64_t run = ts.newRun();
    {
        BatchedWriter writer(ts.store, run, 1h);
        for (int i = 0; i < 5; ++i) writer.add(stepEvent(i, 1, i));
    }
    StoreWatcher watcher(ts.qpath());
    watcher.setInterval(20);
    Received got;
    got.attach(watcher, run);
    watcher.watch(run);
    ASSERT_TRUE(waitFor([&] { return got.metricResets == 1; }));
    const size_t records = got.records.size();
    watcher.watchLogs(run);
    // The log view gets the record again at once; the curves keep their history.
    ASSERT_TRUE(waitFor([&] { return got.records.size() > records; }));
    QTest::qWait(60);
    EXPECT_EQ(got.metricResets, 1);

    BatchedWriter writer(ts.store, run, 1h);
    writer.add(logLine(0, "info", "a"));
    writer.flush();
    ASSERT_TRUE(waitFor([&] { return got.logs.size() == 1; }));
    // Another full watch re-sends the curves' history, and no line written meanwhile is lost.
    writer.add(logLine(0, "info", "b"));
    writer.flush();
    watcher.watch(run);
    writer.add(logLine(0, "info", "c"));
    writer.flush();
    ASSERT_TRUE(waitFor([&] { return got.logs.size() == 3 && got.metricResets == 2; }));
    EXPECT_EQ(got.logs[1].message, "b");
    EXPECT_EQ(got.logs[2].message, "c");
    watcher.unwatch(run);
    watcher.unwatch(run);
    EXPECT_TRUE(watcher.isWatching(run));
    watcher.unwatchLogs(run);
    EXPECT_FALSE(watcher.isWatching(run));
}

TEST(StoreWatcherTest, ReadsRunOnTheWatcherThreadAndAnswerOnlyLiveContexts) {
    TempStore ts;
    const int64_t run = ts.newRun("read-me");
    StoreWatcher watcher(ts.qpath());
    QObject context;
    std::optional<std::string> name;
    Qt::HANDLE jobThread = nullptr;
    watcher.read<std::string>(
        &context,
        [run, &jobThread](const RunStore& s) {
            jobThread = QThread::currentThreadId();
            return s.run(run)->name;
        },
        [&](std::string n) { name = n; });
    ASSERT_TRUE(waitFor([&] { return name.has_value(); }));
    EXPECT_EQ(*name, "read-me");
    EXPECT_NE(jobThread, QThread::currentThreadId());

    QString failure;
    watcher.read<int>(
        &context, [](const RunStore&) -> int { throw StoreError("no such thing"); }, [](int) {},
        [&](const QString& m) { failure = m; });
    ASSERT_TRUE(waitFor([&] { return !failure.isEmpty(); }));
    EXPECT_EQ(failure, QStringLiteral("no such thing"));

    bool called = false;
    auto gone = std::make_unique<QObject>();
    watcher.read<int>(gone.get(), [](const RunStore&) { return 1; }, [&](int) { called = true; });
    gone.reset();
    ASSERT_TRUE(waitFor([&] { return watcher.pendingReads() == 0; }));
    EXPECT_FALSE(called);
}

TEST(StoreWatcherTest, AnUnopenableStoreIsReportedOnce) {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("not-a-store.db"));
    {
        QFile f(path);
        ASSERT_TRUE(f.open(QIODevice::WriteOnly));
        f.write(QByteArray(8192, 'x'));
    }
    StoreWatcher watcher(path);
    watcher.setInterval(10);
    QSignalSpy errors(&watcher, &StoreWatcher::storeError);
    QString failure;
    QObject context;
    watcher.read<int>(&context, [](const RunStore&) { return 1; }, [](int) {}, [&](const QString& m) { failure = m; });
    ASSERT_TRUE(waitFor([&] { return !failure.isEmpty(); }));
    QTest::qWait(100);
    EXPECT_EQ(errors.count(), 1);
    EXPECT_TRUE(errors.first().first().toString().contains(QStringLiteral("not-a-store.db")));
}

// A store whose pages are damaged still opens; the console checks it as it opens it, says so once
// with the way back, and shows what can still be read.
TEST(StoreWatcherTest, ADamagedStoreIsSaidOnceWithTheWayBack) {
    QTemporaryDir dir;
    const std::string path = dir.filePath(QStringLiteral("parallax.db")).toStdString();
    {
        RunStore store(path);
        NewRun r;
        r.name = "before the damage";
        store.createRun(r);
    }
    ASSERT_GT(test::garbleStorePages(path), 0);
    StoreWatcher watcher(QString::fromStdString(path));
    watcher.setInterval(10);
    QSignalSpy errors(&watcher, &StoreWatcher::storeError);
    QObject context;
    int runs = -1;
    watcher.read<int>(&context, [](const RunStore& s) { return static_cast<int>(s.listRuns().size()); },
                      [&](int n) { runs = n; });
    ASSERT_TRUE(waitFor([&] { return errors.count() > 0; }));
    QTest::qWait(100);
    const QString said = errors.first().first().toString();
    EXPECT_TRUE(said.contains(QStringLiteral("is damaged"))) << said.toStdString();
    EXPECT_TRUE(said.contains(QStringLiteral("import"))) << said.toStdString();
}

} // namespace
} // namespace parallax

namespace parallax {
namespace {

// The console's process loses its SQLite locks whenever any of its code opens and closes one of
// the store's files (POSIX locks are per process): a file dialog browsing the store's folder does.
// A supervisor that exits afterwards must not take the WAL and its index away from the console.
TEST(StoreWatcherTest, KeepsReadingAfterAFileDialogTouchedTheStoreAndAWriterExited) {
    TempStore ts;
    const int64_t run = ts.newRun("dialog");
    ts.store.markRunning(run, 4242, "node0");
    const std::string writer = testing::buildDir() + "/tests/ui/live/parallax_test_store_rows";
    auto write = [&](int first, int count) {
        return testing::runProcess({writer, ts.path, std::to_string(run), std::to_string(first), std::to_string(count)});
    };

    StoreWatcher watcher(ts.qpath());
    watcher.setInterval(20);
    Received got;
    got.attach(watcher, run);
    watcher.watch(run);
    testing::ProcessResult r = write(0, 10);
    ASSERT_EQ(r.exitCode, 0) << r.output;
    ASSERT_TRUE(waitFor([&] { return got.metrics.size() == 10; }));

    // As a file dialog does: every file of the folder opened, read a little, closed.
    for (const QFileInfo& f : QDir(ts.dir.path()).entryInfoList(QDir::Files | QDir::Hidden)) {
        QFile file(f.absoluteFilePath());
        ASSERT_TRUE(file.open(QIODevice::ReadOnly)) << f.absoluteFilePath().toStdString();
        file.read(512);
        file.close();
    }

    // A supervisor finishes its run and exits, then another run's supervisor writes.
    r = write(10, 10);
    ASSERT_EQ(r.exitCode, 0) << r.output;
    EXPECT_TRUE(QFileInfo::exists(ts.qpath() + "-wal"));
    EXPECT_TRUE(QFileInfo::exists(ts.qpath() + "-shm"));
    r = write(20, 10);
    ASSERT_EQ(r.exitCode, 0) << r.output;
    EXPECT_NE(r.output.find("steps 30"), std::string::npos) << r.output;

    // The console still reads the rows as they come, and its own edits reach the others.
    EXPECT_TRUE(waitFor([&] { return got.metrics.size() == 30; })) << got.metrics.size();
    ts.store.setNotes(run, "kept");
    r = write(30, 5);
    ASSERT_EQ(r.exitCode, 0) << r.output;
    EXPECT_NE(r.output.find("steps 35"), std::string::npos) << r.output;
    EXPECT_TRUE(waitFor([&] { return got.metrics.size() == 35; })) << got.metrics.size();
    ASSERT_TRUE(waitFor([&] { return !got.records.empty() && got.records.back().notes == "kept"; }));
    EXPECT_EQ(ts.store.metrics(run).size(), 35u);
}

TEST(StoreWatcherTest, DeliversEachRanksStepsOnceAndAlertsWhenTheyChange) {
    using test::waitFor;
    test::TempStore ts;
    const int64_t run = ts.newRun();
    ts.store.insertEvents(run, std::vector<RankStepEvent>{test::rankStep(0, 0, 50, 50), test::rankStep(1, 0, 100, 0)});
    StoreWatcher watcher(ts.qpath());
    watcher.setInterval(20);
    std::vector<RankStepEvent> steps;
    std::vector<std::vector<RunAlert>> alerts;
    int resets = 0;
    QObject::connect(&watcher, &StoreWatcher::rankStepsAdded, [&](qint64 id, const std::vector<RankStepEvent>& rows, bool reset) {
        if (id != run) return;
        if (reset) {
            steps.clear();
            ++resets;
        }
        steps.insert(steps.end(), rows.begin(), rows.end());
    });
    QObject::connect(&watcher, &StoreWatcher::alertsChanged, [&](qint64 id, const std::vector<RunAlert>& a) {
        if (id == run) alerts.push_back(a);
    });
    watcher.watch(run);
    ASSERT_TRUE(waitFor([&] { return steps.size() == 2 && alerts.size() == 1; }));
    EXPECT_EQ(resets, 1);
    EXPECT_TRUE(alerts.front().empty());
    // Rank 0 is a step ahead; rank 1's row of step 1 comes later, through its own pipe.
    ts.store.insertEvents(run, std::vector<RankStepEvent>{test::rankStep(0, 1, 50, 50), test::rankStep(0, 2, 50, 50)});
    ASSERT_TRUE(waitFor([&] { return steps.size() == 4; }));
    ts.store.insertEvents(run, std::vector<RankStepEvent>{test::rankStep(1, 1, 100, 0)});
    ASSERT_TRUE(waitFor([&] { return steps.size() == 5; }));
    EXPECT_EQ(steps.back().rank, 1);
    EXPECT_EQ(steps.back().step, 1);

    RunAlert a;
    a.kind = AlertKind::Straggler;
    a.message = "rank 1 on node0: compute 2.00x the median of the others";
    a.t = 1.7e9;
    ts.store.setAlert(run, a);
    ASSERT_TRUE(waitFor([&] { return alerts.size() == 2; }));
    ASSERT_EQ(alerts.back().size(), 1u);
    EXPECT_EQ(alerts.back().front().message, a.message);
    EXPECT_TRUE(alerts.back().front().active);
    // Said again later (only its time changes): nothing new to show. Ended: sent.
    a.t += 5;
    ts.store.setAlert(run, a);
    ts.store.insertEvents(run, std::vector<RankStepEvent>{test::rankStep(0, 3, 50, 50)});
    ASSERT_TRUE(waitFor([&] { return steps.size() == 6; }));
    QTest::qWait(60);
    EXPECT_EQ(alerts.size(), 2u);
    a.active = false;
    ts.store.setAlert(run, a);
    ASSERT_TRUE(waitFor([&] { return alerts.size() == 3; }));
    EXPECT_FALSE(alerts.back().front().active);
    QTest::qWait(60);
    EXPECT_EQ(steps.size(), 6u);
}

} // namespace
} // namespace parallax

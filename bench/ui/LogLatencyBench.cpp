// A log line's way to the screen: a writer thread plays the supervisor (its own store connection,
// a BatchedWriter flushed on its 100 ms interval, other ranks chattering meanwhile), the console
// side is a StoreWatcher at its real polling interval feeding a shown LogsPage in follow mode.
// Measured from BatchedWriter::add() (and from the commit) to the moment the line's row is loaded
// in the model that the view shows. The log already holds a million lines, so that the figures
// include paging over a large log; its first count and random page reads are reported as well.
#include "bench/ui/BenchTable.h"
#include "core/store/BatchedWriter.h"
#include "core/store/RunStore.h"
#include "ui/models/LogTableModel.h"
#include "ui/models/StoreWatcher.h"
#include "ui/pages/LogsPage.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace parallax;
using namespace parallax::bench;
using Clock = std::chrono::steady_clock;

namespace {

double msBetween(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

LogRow line(int rank, const std::string& level, std::string message) {
    LogRow r;
    r.rank = rank;
    r.host = "node" + std::to_string(rank / 8);
    r.level = LogLevel::fromName(level);
    r.stream = "stdout";
    r.message = std::move(message);
    r.t = static_cast<double>(std::chrono::duration_cast<std::chrono::microseconds>(
                                  std::chrono::system_clock::now().time_since_epoch()).count()) / 1e6;
    return r;
}

struct Probe {
    Clock::time_point added, committed, seen;
    bool isCommitted = false, isSeen = false;
};

} // namespace

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") &&
        qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
        qputenv("QT_QPA_PLATFORM", "offscreen");
    }
    QApplication app(argc, argv);
    const int history = argc > 1 ? std::stoi(argv[1]) : 1'000'000;
    const int probes = argc > 2 ? std::stoi(argv[2]) : 40;

    QTemporaryDir dir;
    const std::string path = dir.filePath(QStringLiteral("parallax.db")).toStdString();
    int64_t run = 0;
    double populateS = 0;
    {
        RunStore store(path);
        NewRun r;
        r.name = "log-latency";
        r.world_size = 16;
        run = store.createRun(r);
        store.markRunning(run, 1, "bench");
        QElapsedTimer t;
        t.start();
        BatchedWriter w(store, run, std::chrono::hours(1), 50000);
        static const char* levels[] = {"info", "info", "info", "debug", "warn"};
        for (int i = 0; i < history; ++i) {
            w.add(line(i % 16, levels[i % 5], "step " + std::to_string(i / 16) + " rank " + std::to_string(i % 16) +
                                                  " loss 2.31 grad_norm 0.97 NCCL INFO channel " + std::to_string(i % 32)));
        }
        w.flush();
        populateS = static_cast<double>(t.elapsed()) / 1000.0;
    }

    StoreWatcher watcher(dir.filePath(QStringLiteral("parallax.db")));
    LogsPage page(&watcher);
    page.resize(1200, 700);
    page.show();
    LogTableModel* model = page.model();

    // Opening the million-line log: its count and page anchors, read in the watcher's thread.
    QElapsedTimer open;
    open.start();
    page.setRun(run);
    const bool opened = QTest::qWaitFor([&] { return model->isReady(); }, 60000);
    const double openMs = static_cast<double>(open.nsecsElapsed()) / 1e6;

    // Random deep page reads, as a scrollbar drag would ask for them.
    std::vector<double> pageMs;
    page.setFollow(false);
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> anyRow(0, model->rowCount() - 1);
    for (int k = 0; k < 30; ++k) {
        const int row = anyRow(rng);
        if (model->isLoaded(row)) continue;
        QElapsedTimer t;
        t.start();
        model->data(model->index(row, LogTableModel::MessageColumn));
        if (!QTest::qWaitFor([&] { return model->isLoaded(row); }, 10000)) continue;
        pageMs.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
    }
    // A filtered view of the same log: one rank, then a full-text search.
    QElapsedTimer filtered;
    filtered.start();
    page.setRankFilter({3});
    const bool rankReady = QTest::qWaitFor([&] { return model->isReady(); }, 60000);
    const double rankMs = static_cast<double>(filtered.nsecsElapsed()) / 1e6;
    const int rankRows = model->rowCount();
    filtered.start();
    page.setRankFilter({});
    page.setSearchText(QStringLiteral("channel 17"));
    const bool searchReady = QTest::qWaitFor([&] { return model->isReady(); }, 60000);
    const double searchMs = static_cast<double>(filtered.nsecsElapsed()) / 1e6;
    const int searchRows = model->rowCount();
    page.setSearchText(QString());
    if (!opened || !rankReady || !searchReady || !QTest::qWaitFor([&] { return model->isReady(); }, 60000)) {
        std::fprintf(stderr, "the log model never finished counting\n");
        return 1;
    }
    page.setFollow(true);
    page.view()->scrollToBottom();

    // The supervisor: chatter from 16 ranks (~200 lines/s) and, now and then, a probe line.
    std::mutex mutex;
    std::map<int, Probe> seen;
    std::atomic<bool> stop{false};
    std::thread supervisor([&] {
        RunStore store(path);
        BatchedWriter w(store, run); // 100 ms, as the supervisor flushes
        std::mt19937 r(3);
        std::uniform_int_distribution<int> gap(250, 650);
        auto nextProbe = Clock::now() + std::chrono::milliseconds(gap(r));
        auto nextChatter = Clock::now();
        int probe = 0, chatter = 0;
        std::vector<int> pending;
        while (!stop && probe < probes) {
            const auto now = Clock::now();
            if (now >= nextChatter) {
                w.add(line(chatter % 16, "info", "chatter " + std::to_string(chatter)));
                ++chatter;
                nextChatter += std::chrono::milliseconds(5);
            }
            if (now >= nextProbe) {
                {
                    std::lock_guard<std::mutex> lock(mutex);
                    seen[probe].added = Clock::now();
                }
                w.add(line(probe % 16, "warn", "probe " + std::to_string(probe)));
                pending.push_back(probe++);
                nextProbe = now + std::chrono::milliseconds(gap(r));
            }
            if (w.maybeFlush()) {
                const auto committed = Clock::now();
                std::lock_guard<std::mutex> lock(mutex);
                for (int p : pending) {
                    seen[p].committed = committed;
                    seen[p].isCommitted = true;
                }
                pending.clear();
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        w.flush();
        const auto committed = Clock::now();
        std::lock_guard<std::mutex> lock(mutex);
        for (int p : pending) {
            seen[p].committed = committed;
            seen[p].isCommitted = true;
        }
    });

    // A probe counts as arrived once its row is loaded in the model the view shows.
    auto scan = [&](int first, int last) {
        const auto now = Clock::now();
        for (int row = std::max(0, first); row <= last; ++row) {
            const auto r = model->rowAt(row);
            if (!r || r->message.rfind("probe ", 0) != 0) continue;
            const int id = std::stoi(r->message.substr(6));
            std::lock_guard<std::mutex> lock(mutex);
            Probe& p = seen[id];
            if (!p.isSeen) {
                p.seen = now;
                p.isSeen = true;
            }
        }
    };
    QObject::connect(model, &LogTableModel::pageLoaded, scan);
    const bool done = QTest::qWaitFor(
        [&] {
            std::lock_guard<std::mutex> lock(mutex);
            if (static_cast<int>(seen.size()) < probes) return false;
            for (const auto& [id, p] : seen) {
                if (!p.isSeen) return false;
            }
            return true;
        },
        probes * 1000 + 30000);
    stop = true;
    supervisor.join();

    std::vector<double> fromAdd, fromCommit;
    double worst = -1, worstToCommit = 0;
    int worstId = -1;
    for (const auto& [id, p] : seen) {
        if (!p.isSeen) continue;
        fromAdd.push_back(msBetween(p.added, p.seen));
        if (p.isCommitted) fromCommit.push_back(msBetween(p.committed, p.seen));
        if (fromAdd.back() > worst && p.isCommitted) {
            worst = fromAdd.back();
            worstId = id;
            worstToCommit = msBetween(p.added, p.committed);
        }
    }
    const double p95 = percentile(fromAdd, 0.95);
    char buf[160];
    std::vector<BenchRow> rows;
    std::snprintf(buf, sizeof buf, "%.1f s", populateS);
    rows.push_back({"write " + std::to_string(history) + " lines (setup)", "", buf, true});
    rows.push_back({"open the log: count + page anchors", "", ms(openMs), true});
    std::snprintf(buf, sizeof buf, "%s / %s", ms(percentile(pageMs, 0.5)).c_str(), ms(percentile(pageMs, 1.0)).c_str());
    rows.push_back({"random deep page of 1000 rows (median / max)", "", buf, true});
    rows.push_back({"filter one rank (" + std::to_string(rankRows) + " rows)", "", ms(rankMs), true});
    rows.push_back({"full-text search (" + std::to_string(searchRows) + " rows)", "", ms(searchMs), true});
    std::snprintf(buf, sizeof buf, "%zu of %d", fromAdd.size(), probes);
    rows.push_back({"probe lines that reached the view", "all", buf, done && static_cast<int>(fromAdd.size()) == probes});
    rows.push_back({"line add() -> row in view (median)", "< 250 ms", ms(percentile(fromAdd, 0.5)),
                    percentile(fromAdd, 0.5) < 250});
    rows.push_back({"line add() -> row in view (p95)", "< 250 ms", ms(p95), p95 < 250});
    rows.push_back({"line add() -> row in view (max)", "", ms(percentile(fromAdd, 1.0)), true});
    // The commit time is taken when flush() returns, which can be after readers see the rows
    // (SQLite checkpoints, or FTS5 merges its index segments, after the commit).
    std::snprintf(buf, sizeof buf, "#%d: %.1f / %.1f ms", worstId, worstToCommit, worst);
    rows.push_back({"slowest line: add -> flush returned / -> view", "", buf, true});
    rows.push_back({"commit -> row in view (median / p95)", "",
                    ms(percentile(fromCommit, 0.5)) + " / " + ms(percentile(fromCommit, 0.95)), true});
    printTable("Log line latency: BatchedWriter (100 ms batches) -> StoreWatcher (" +
                   std::to_string(StoreWatcher::kDefaultIntervalMs) + " ms polls) -> LogsPage, " +
                   std::to_string(history) + "-line log",
               rows);
    return 0;
}

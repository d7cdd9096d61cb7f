#pragma once

#include "core/store/RunStore.h"
#include "core/store/StoreTypes.h"
#include "core/telemetry/Events.h"

#include <QMetaMethod>
#include <QMetaType>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QThread>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

namespace parallax {

class StoreWatcherWorker;

// Watches the store from a background thread with its own RunStore connection, so that the GUI
// thread never waits on SQLite. Every `interval` it reads PRAGMA data_version (an idle poll costs
// one tiny statement); when another connection has committed since, it reads what is new and
// emits value snapshots through queued signals, in the thread that owns the watcher:
//  - runsChanged: the whole runs list, when any row differs (runs started from a terminal or a
//    batch job appear because they are simply new rows);
//  - for each watched run: its record, run_start, and the metrics, device samples, spans and log
//    rows past per-run high-water marks (last step, last sample time, last span step, last log id),
//    the supervisor's status of each of its hosts and its alerts (hang, straggler) whenever one
//    changed, and each rank's compute and wait time per step.
// Spans of a run's newest step are held back until a later step (or the run's end) shows that
// all ranks have written theirs; spans are read only while something is connected to spansAdded.
//
// A run watched anew is read from its last window, so that opening a long run costs what one
// window holds rather than its whole history: device samples of its last kOpenWindowSeconds, its
// ranks' last kOpenRankSteps steps and (for spansAdded) its last kOpenSpanSteps steps with spans;
// metrics (one row per step) are sent whole. Older device samples and rank steps are read when a
// view asks for them (loadDeviceSamples, loadRankSteps).
class StoreWatcher : public QObject {
    Q_OBJECT
public:
    static constexpr int kDefaultIntervalMs = 100;
    // The runs list is re-read at most this often while the store keeps changing.
    static constexpr int kRunsIntervalMs = 500;
    // Log rows per poll and run; a burst beyond it is read by the following polls, at once.
    static constexpr int64_t kMaxLogRowsPerPoll = 5000;
    // The window a run is opened at: device samples this many seconds (the store's time unit)
    // before its newest one...
    static constexpr double kOpenWindowSeconds = 600;
    // ...each rank's steps from this many before its last step (the most the device heat map
    // draws a column each, HeatMapPlot::kMaxColumns)...
    static constexpr int64_t kOpenRankSteps = 400;
    // ...and the spans of this many of its newest steps that have spans.
    static constexpr size_t kOpenSpanSteps = 8;

    // Polling starts at once. The store file is created when missing.
    explicit StoreWatcher(const QString& storePath, QObject* parent = nullptr);
    ~StoreWatcher() override; // lets the running poll or read finish, then stops the thread

    QString storePath() const { return m_path; }
    void setInterval(int milliseconds);
    int interval() const { return m_interval; }

    // Watching is counted: a run stays watched until unwatch() was called as often as watch().
    // Every watch() re-sends the run's record and its last window (signals with reset = true),
    // so each new subscriber starts from the same picture. Log history is not re-sent (it can be
    // millions of lines; LogTableModel pages it): logsAdded carries the rows written after the
    // watch began.
    void watch(qint64 run);
    void unwatch(qint64 run);
    // A lighter watch for a log view: the run's record and run_start (sent again at once) and
    // logsAdded, without reading metrics, samples or spans and without making the full
    // subscribers receive their history again. Counted apart from watch().
    void watchLogs(qint64 run);
    void unwatchLogs(qint64 run);
    // Watched either way.
    bool isWatching(qint64 run) const;

    // Polls now rather than at the next tick, e.g. after the console itself wrote to the store.
    void pollNow();

    // Rows of a run older than what watch() sent, for a view that looks further back: device
    // samples whose time lies in [from, until) reach deviceSamplesLoaded, rank steps whose step
    // lies in [from, until) reach rankStepsLoaded, in key order, read on the watcher's thread
    // whether the run is watched or not. They are apart from the rows of deviceSamplesAdded and
    // rankStepsAdded: a view that asks for the range before the oldest row it holds gets each
    // row once.
    void loadDeviceSamples(qint64 run, double from, double until);
    void loadRankSteps(qint64 run, qint64 from, qint64 until);

    // Runs `job` on the watcher's thread with its store connection, then `done` with the result
    // in the watcher's thread, unless `context` is gone by then. A job that throws calls `failed`
    // (if given, same rule) with the error's text instead. Jobs and polls run one after another,
    // in the order given.
    template <typename Result>
    void read(QObject* context, std::function<Result(const RunStore&)> job,
              std::function<void(Result)> done, std::function<void(const QString&)> failed = {});

    // Reads submitted and not yet delivered (for tests and benchmarks that wait for quiet).
    int pendingReads() const { return m_pendingReads; }

signals:
    void runsChanged(const std::vector<parallax::RunRecord>& runs);
    void runChanged(const parallax::RunRecord& run); // a watched run's record changed
    void runStartLoaded(qint64 run, const parallax::RunStartEvent& start);
    void metricsAdded(qint64 run, const std::vector<parallax::StepEvent>& rows, bool reset);
    void deviceSamplesAdded(qint64 run, const std::vector<parallax::DeviceEvent>& rows, bool reset);
    void spansAdded(qint64 run, const std::vector<parallax::SpanEvent>& rows, bool reset);
    void logsAdded(qint64 run, const std::vector<parallax::LogRow>& rows);
    // A watched run's hosts (RunStore::hostStatuses, by host), each time one of them changed; at
    // every watch() too (empty for a run on this machine).
    void hostStatusesChanged(qint64 run, const std::vector<parallax::HostStatus>& statuses);
    // A watched run's per rank and step compute and wait times (RunStore::rankSteps) past the
    // rows already sent; each (step, rank) once, in step order within a signal.
    void rankStepsAdded(qint64 run, const std::vector<parallax::RankStepEvent>& rows, bool reset);
    // The answers of loadDeviceSamples and loadRankSteps, with the range asked for.
    void deviceSamplesLoaded(qint64 run, double from, double until, const std::vector<parallax::DeviceEvent>& rows);
    void rankStepsLoaded(qint64 run, qint64 from, qint64 until, const std::vector<parallax::RankStepEvent>& rows);
    // A watched run's alerts (RunStore::alerts, active or ended), each time one changed; at every
    // watch() too.
    void alertsChanged(qint64 run, const std::vector<parallax::RunAlert>& alerts);
    // A watched run's Slurm job (RunStore::slurmJob) whenever Slurm said something new of it.
    void slurmJobChanged(qint64 run, const parallax::SlurmJob& job);
    // Runs in Slurm batch jobs of this host that no supervisor follows (RunStore::unfollowedBatchRuns),
    // at most every kRunsIntervalMs while there are any.
    void unfollowedBatchRuns(const QList<qint64>& runs);
    // After each poll that found the store changed (and after pollNow()), once its signals above
    // were emitted.
    void polled(qint64 dataVersion);
    void storeError(const QString& message);

protected:
    // Count the connections to spansAdded, so that the worker reads spans only while there are any.
    void connectNotify(const QMetaMethod& signal) override;
    void disconnectNotify(const QMetaMethod& signal) override;

private:
    // Runs on the watcher's thread; `deliver` posts a function back to this object's thread.
    // `job` gets nullptr and the reason when the store cannot be opened.
    void post(std::function<void(const RunStore*, const QString&)> job);
    void deliver(std::function<void()> fn);

    QString m_path;
    int m_interval = kDefaultIntervalMs;
    std::map<qint64, int> m_watchCount;    // watch() + watchLogs() calls not yet undone
    int m_pendingReads = 0;
    // Connections to spansAdded; read by the worker (connectNotify may run on any thread).
    std::shared_ptr<std::atomic<int>> m_spanListeners = std::make_shared<std::atomic<int>>(0);
    QThread m_thread;
    StoreWatcherWorker* m_worker = nullptr; // lives in m_thread
};

template <typename Result>
void StoreWatcher::read(QObject* context, std::function<Result(const RunStore&)> job,
                        std::function<void(Result)> done, std::function<void(const QString&)> failed) {
    // The guard is only copied on the worker thread; it is tested in this object's thread, where
    // `context` lives, so it cannot be destroyed between the test and the call.
    QPointer<QObject> guard(context);
    ++m_pendingReads;
    post([this, guard, job = std::move(job), done = std::move(done),
          failed = std::move(failed)](const RunStore* store, const QString& openError) {
        try {
            if (!store) throw StoreError(openError.toStdString());
            auto result = std::make_shared<Result>(job(*store));
            deliver([this, guard, done, result] {
                --m_pendingReads;
                if (guard && done) done(std::move(*result));
            });
        } catch (const std::exception& e) {
            const QString message = QString::fromStdString(e.what());
            deliver([this, guard, failed, message] {
                --m_pendingReads;
                if (guard && failed) failed(message);
            });
        }
    });
}

} // namespace parallax

Q_DECLARE_METATYPE(parallax::RunRecord)
Q_DECLARE_METATYPE(parallax::RunStartEvent)
Q_DECLARE_METATYPE(std::vector<parallax::RunRecord>)
Q_DECLARE_METATYPE(std::vector<parallax::StepEvent>)
Q_DECLARE_METATYPE(std::vector<parallax::DeviceEvent>)
Q_DECLARE_METATYPE(std::vector<parallax::SpanEvent>)
Q_DECLARE_METATYPE(std::vector<parallax::LogRow>)
Q_DECLARE_METATYPE(std::vector<parallax::HostStatus>)
Q_DECLARE_METATYPE(std::vector<parallax::RankStepEvent>)
Q_DECLARE_METATYPE(std::vector<parallax::RunAlert>)
Q_DECLARE_METATYPE(parallax::SlurmJob)

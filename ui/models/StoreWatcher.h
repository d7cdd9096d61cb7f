#pragma once

#include "core/store/RunStore.h"
#include "core/store/StoreTypes.h"
#include "core/telemetry/Events.h"

#include <QMetaType>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QThread>

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
// all ranks have written theirs.
class StoreWatcher : public QObject {
    Q_OBJECT
public:
    static constexpr int kDefaultIntervalMs = 100;
    // The runs list is re-read at most this often while the store keeps changing.
    static constexpr int kRunsIntervalMs = 500;
    // Log rows per poll and run; a burst beyond it is read by the following polls, at once.
    static constexpr int64_t kMaxLogRowsPerPoll = 5000;

    // Polling starts at once. The store file is created when missing.
    explicit StoreWatcher(const QString& storePath, QObject* parent = nullptr);
    ~StoreWatcher() override; // lets the running poll or read finish, then stops the thread

    QString storePath() const { return m_path; }
    void setInterval(int milliseconds);
    int interval() const { return m_interval; }

    // Watching is counted: a run stays watched until unwatch() was called as often as watch().
    // Every watch() re-sends the run's record and history (signals with reset = true), so each
    // new subscriber starts from a complete picture. Log history is not re-sent (it can be
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

private:
    // Runs on the watcher's thread; `deliver` posts a function back to this object's thread.
    // `job` gets nullptr and the reason when the store cannot be opened.
    void post(std::function<void(const RunStore*, const QString&)> job);
    void deliver(std::function<void()> fn);

    QString m_path;
    int m_interval = kDefaultIntervalMs;
    std::map<qint64, int> m_watchCount;    // watch() + watchLogs() calls not yet undone
    int m_pendingReads = 0;
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

#pragma once

#include "core/store/RunStore.h"
#include "core/store/StoreTypes.h"
#include "core/telemetry/Events.h"

#include <QElapsedTimer>
#include <QObject>
#include <QString>
#include <QTimer>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

namespace parallax {

// StoreWatcher's half that lives in its thread: owns that thread's RunStore connection, polls on
// a timer and runs read jobs. Its signals reach StoreWatcher through queued connections.
class StoreWatcherWorker : public QObject {
    Q_OBJECT
public:
    // spanListeners: how many are connected to StoreWatcher::spansAdded (spans are read only
    // while there are any).
    StoreWatcherWorker(QString storePath, int intervalMs, std::shared_ptr<const std::atomic<int>> spanListeners);
    ~StoreWatcherWorker() override;

    // All of these run in the worker's thread (StoreWatcher invokes them queued).
    void start();
    void setInterval(int milliseconds);
    void watch(qint64 run, bool logsOnly);
    void unwatch(qint64 run, bool logsOnly);
    void poll(bool force);
    // `job` gets nullptr and the reason when the store cannot be opened.
    void runJob(const std::function<void(const RunStore*, const QString&)>& job);

signals:
    void runsChanged(const std::vector<parallax::RunRecord>& runs);
    void runChanged(const parallax::RunRecord& run);
    void runStartLoaded(qint64 run, const parallax::RunStartEvent& start);
    void metricsAdded(qint64 run, const std::vector<parallax::StepEvent>& rows, bool reset);
    void deviceSamplesAdded(qint64 run, const std::vector<parallax::DeviceEvent>& rows, bool reset);
    void spansAdded(qint64 run, const std::vector<parallax::SpanEvent>& rows, bool reset);
    void logsAdded(qint64 run, const std::vector<parallax::LogRow>& rows);
    void hostStatusesChanged(qint64 run, const std::vector<parallax::HostStatus>& statuses);
    void rankStepsAdded(qint64 run, const std::vector<parallax::RankStepEvent>& rows, bool reset);
    void alertsChanged(qint64 run, const std::vector<parallax::RunAlert>& alerts);
    void slurmJobChanged(qint64 run, const parallax::SlurmJob& job);
    void unfollowedBatchRuns(const QList<qint64>& runs);
    void polled(qint64 dataVersion);
    void storeError(const QString& message);

private:
    struct Watched {
        int refs = 0;               // watch(): everything
        int logRefs = 0;            // watchLogs(): record, run_start and log lines
        bool reset = true;          // send the last window of history on the next poll
        bool resendRecord = true;   // send the record and run_start again on the next poll
        bool logsStarted = false;   // lastLogId holds the run's last id at the first watch
        std::optional<RunRecord> record;
        bool runStartSent = false;
        int64_t lastStep = -1;
        double lastDeviceT = 0;
        std::map<int, double> lastRankT; // per rank: its newest sample's time
        int64_t lastSpanStep = -1;
        bool spansSent = false;      // spans were sent since the last reset (someone listens)
        int64_t lastLogId = 0;
        std::optional<std::vector<HostStatus>> hostStatuses; // as last sent
        int64_t lastRankStep = -1;
        std::map<int, int64_t> lastStepOfRank; // per rank: the newest step sent
        std::optional<std::vector<RunAlert>> alerts; // as last sent
        std::optional<SlurmJob> slurmJob;             // as last sent
    };

    QElapsedTimer m_sinceBatchCheck;
    bool open();
    // Returns whether more rows are waiting (a log burst larger than one poll takes).
    bool pollRun(qint64 id, Watched& w);
    void pollTelemetry(qint64 id, Watched& w, const RunRecord& record, bool reset);
    // pollTelemetry's parts; on a reset each reads the run's last window only.
    void pollDeviceSamples(qint64 id, Watched& w, bool reset);
    void pollSpans(qint64 id, Watched& w, const RunRecord& record, bool reset);
    void pollRankSteps(qint64 id, Watched& w, bool reset);
    void pollStatus(qint64 id, Watched& w, bool reset); // host statuses, alerts, the Slurm job
    // Returns whether more log lines are waiting.
    bool pollLogs(qint64 id, Watched& w);
    void reportError(const QString& message);

    QString m_path;
    int m_interval;
    std::shared_ptr<const std::atomic<int>> m_spanListeners;
    std::unique_ptr<RunStore> m_store;
    QTimer* m_timer = nullptr;
    std::map<qint64, Watched> m_watched;
    std::optional<int64_t> m_version;
    std::vector<RunRecord> m_runs;
    bool m_runsKnown = false;
    bool m_runsStale = true;  // the store changed since the runs list was read
    QElapsedTimer m_sinceRuns;
    QString m_lastError;
};

} // namespace parallax

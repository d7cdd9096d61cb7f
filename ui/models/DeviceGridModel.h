#pragma once

#include "core/store/StoreTypes.h"
#include "core/telemetry/Events.h"

#include <QAbstractTableModel>
#include <QString>
#include <QStringList>

#include <map>
#include <optional>
#include <vector>

namespace parallax {

// The devices of a run as a host x device grid, from the watcher's device samples: one row per
// host (in order of its lowest rank), one column per device slot (the GPU index on GPU runs, the
// rank's position on its host on CPU runs). Each cell holds the latest sample of that device; a
// device whose latest sample lags the newest one by kStaleSeconds is marked stale (a hung rank
// stops sampling). Ranks that run_start places on a host but that have not sampled yet get a
// cell too, so that a host that never answers still has its row. The supervisor's view of each
// host (HostStatus: answering, silent, lost) marks the host's row.
//
// Hosts with a flagged rank (one an active alert names, or a stale one) come first, live or
// ended, the others after them in order of their lowest rank: at 128 hosts a straggler's or a
// hung rank's row would otherwise be far down the list. A cell says little (the rank, what its
// colour stands for, why it is flagged) so that it stays readable in a narrow column; its tooltip
// holds the detail.
//
// A cell's colour says what its rank does (RankActivityPalette): from the ranks' per-step compute
// and wait times (rank_steps), the share of its recent steps it computes rather than waits in
// collectives. A rank spinning in an all-reduce burns a whole core or GPU while it waits, so
// utilization alone would paint the ranks that wait for a straggler hotter than the straggler.
// Runs without rank_steps fall back to utilization on the same scale (a GPU's %, or a CPU rank's
// process CPU % over its threads). Ranks named by an active alert (hang, straggler) are marked.
// It also keeps every rank's history over steps (compute share) and time (utilization) for the
// heat map, each bounded (kMaxStepHistory, kMaxTimeHistory) by merging its oldest detail.
class DeviceGridModel : public QAbstractTableModel {
    Q_OBJECT
public:
    static constexpr double kStaleSeconds = 10.0;

    enum Role {
        RankRole = Qt::UserRole + 1, // int, -1 for an empty cell
        IsGpuRole,                   // bool
        UtilizationRole,             // double %: GPU utilization, or process CPU % on CPU runs
        MemoryUsedRole,              // double bytes (GPU memory, or RSS on CPU runs)
        MemoryTotalRole,             // double bytes, -1 unknown
        TemperatureRole,             // double °C, -1 unknown
        PowerRole,                   // double W, -1 unknown
        StaleRole,                   // bool
        DeviceLabelRole,             // "GPU 1" | "CPU"
        HasSampleRole,               // bool: false for a rank known from run_start only
        HostStateRole,               // QString: the host's HostStatus state, "" when unknown
        HostAlarmRole,               // bool: the host is silent or lost
        ComputeShareRole,            // double 0..1 over the recent steps; NaN without rank_steps
        WaitShareRole,               // double 0..1: waiting in collectives; NaN without rank_steps
        AlertRole,                   // bool: an active alert names the rank
        ActivityShareRole,           // double 0..1 the colour stands for: compute share, else busy share
        FlaggedRole,                 // bool: an active alert names the rank, or it is stale
    };

    // Steps over which a cell's compute and wait shares are judged.
    static constexpr size_t kActivitySteps = 10;

    // Entries a rank's step history keeps: past it, neighbours are merged in pairs, so that a long
    // run costs bounded memory and the heat map (a few hundred columns) loses nothing it draws.
    static constexpr size_t kMaxStepHistory = 4096;
    // The same for a rank's utilization samples over time (at two samples a second, an hour is
    // 7,200 a rank; 1,024 ranks kept whole grew by 115 MB an hour).
    static constexpr size_t kMaxTimeHistory = 4096;

    // One rank's compute share per step, in step order; an entry stands for the steps up to the
    // next entry's (one step each until the history was merged).
    struct StepHistory {
        int rank = 0;
        QString label; // "r3 node1"
        std::vector<int64_t> steps;
        std::vector<float> computeShare; // 0..1
    };
    // A rank's compute and wait time per step over its recent steps.
    struct Activity {
        double computeMs = 0;
        double waitMs = 0;
        int steps = 0;
        double computeShare() const;
        double waitShare() const;
    };

    // One rank's utilization samples, in time order.
    struct History {
        int rank = 0;
        QString label; // "r3 node1:1"
        std::vector<double> t;
        std::vector<double> util;
    };

    explicit DeviceGridModel(QObject* parent = nullptr);

    void clear();
    // reset: `samples` are the run's history as the watcher opens it, its last window (the hosts
    // of run_start and the host statuses stay).
    void addSamples(const std::vector<DeviceEvent>& samples, bool reset);
    // Each rank's host, from run_start.
    void setRankHosts(const std::vector<std::string>& hosts);
    // The supervisor's latest view of each host (RunStore::hostStatuses).
    void setHostStatuses(const std::vector<HostStatus>& statuses);
    const std::vector<HostStatus>& hostStatuses() const { return m_hostStatuses; }
    // The status of a row's host: the one of the same name, or of the same name up to the
    // domain ("node2" and "node2.cluster.local"); nullptr when none.
    const HostStatus* hostStatus(int row) const;
    static bool isAlarm(const HostStatus& status) { return status.state != HostState::Answering; }
    // "node2 silent for 12 s (ssh: ...)", "node3 lost (...)".
    static QString hostStatusText(const HostStatus& status);

    // reset: `rows` are the run's history as the watcher opens it, its last steps.
    void addRankSteps(const std::vector<RankStepEvent>& rows, bool reset);
    // Rows older than those held, as StoreWatcher::loadDeviceSamples and loadRankSteps read them
    // (in key order): each rank's rows before its oldest entry go before its history, which stays
    // within its bound (kMaxTimeHistory, kMaxStepHistory); rows at or after it are held already.
    void addOlderSamples(const std::vector<DeviceEvent>& samples);
    void addOlderRankSteps(const std::vector<RankStepEvent>& rows);
    // The oldest step held of any rank; none without rank steps.
    std::optional<int64_t> firstStep() const;
    std::optional<Activity> activity(int rank) const;
    // Ranks in order, with their compute share per step (empty for a run without rank_steps).
    const std::vector<StepHistory>& stepHistories() const { return m_stepHistories; }

    // The run's alerts (RunStore::alerts): the ranks the active ones name as the cause are marked.
    void setAlerts(const std::vector<RunAlert>& alerts);
    bool isAlerted(int rank) const { return m_alerted.count(rank) > 0; }
    // Named by an active alert, or stale (its last sample lags the newest by kStaleSeconds): its
    // host's row comes first.
    bool isFlagged(int rank) const;

    // Threads a CPU rank computes with: 100% CPU per thread is a CPU rank fully busy.
    void setCpuThreadsPerRank(int threads);
    int cpuThreadsPerRank() const { return m_cpuThreads; }
    // Whether the run has ended (stopped, finished, failed): its cells then say so, in grey, and
    // show the last figures as such rather than as a live reading.
    void setRunEnded(bool ended);
    bool runEnded() const { return m_ended; }
    // A sample's utilization as a share 0..1 of the device (NaN unknown).
    double busyShare(const DeviceEvent& e) const;

    bool isGpu() const { return m_gpu; }
    // Ranks in order, with their utilization histories.
    const std::vector<History>& histories() const { return m_histories; }
    double firstTime() const { return m_firstT; }
    double lastTime() const { return m_lastT; }
    std::optional<DeviceEvent> latest(int rank) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    static QString formatBytes(double bytes);

private:
    struct Cell {
        int rank = -1;
        bool hasSample = false;
        DeviceEvent sample;
    };
    void rebuildLayout(); // hosts and slots changed: the grid's shape is recomputed (a reset)
    // Hosts with a flagged rank first, then by lowest rank. sortRows: in place (within a reset);
    // reorderRows: a reset when the order changed (flags came or went).
    std::vector<size_t> rowOrder() const;
    void sortRows();
    bool reorderRows();
    void resetSamples();  // forgets the samples (within a reset)
    static double utilizationOf(const DeviceEvent& e);
    QString rankLabel(int rank) const;
    void relabelStepHistories();
    void cellsChanged();
    // After older rows: the histories are in rank order again and the views told.
    void olderRowsAdded(bool newRank);
    // data()'s parts: the text the activity and the alerts add, a cell without a device sample,
    // and a sampled cell's text, tooltip and other roles. alarmStatus: the host's status when it
    // is an alarm, else nullptr.
    QString activityLine(const std::optional<Activity>& act) const;
    QString activityTip(const std::optional<Activity>& act) const;
    QString alertTip(int rank) const;
    QString alertKinds(int rank) const; // "straggler", "hang, straggler"; empty when none
    QVariant unsampledData(int row, const Cell& cell, const std::optional<Activity>& act,
                           const HostStatus* alarmStatus, int role) const;
    bool isStale(const DeviceEvent& e) const;
    QString sampleText(const Cell& cell, const std::optional<Activity>& act) const;
    QString sampleToolTip(const Cell& cell, const std::optional<Activity>& act, const HostStatus* alarmStatus) const;
    QVariant sampleData(const Cell& cell, const std::optional<Activity>& act, int role) const;

    bool m_gpu = false;
    std::map<int, DeviceEvent> m_latest; // by rank
    std::vector<std::string> m_rankHosts; // run_start's host of each rank
    std::vector<HostStatus> m_hostStatuses;
    std::map<int, size_t> m_historyIndex; // rank -> m_histories index
    std::vector<History> m_histories;
    QStringList m_hosts;
    std::vector<std::vector<Cell>> m_grid; // [host row][slot]
    int m_columns = 0;
    double m_firstT = 0;
    double m_lastT = 0;
    std::map<int, std::vector<RankStepEvent>> m_recentSteps; // by rank: its last kActivitySteps
    std::map<int, size_t> m_stepHistoryIndex;                 // rank -> m_stepHistories index
    std::vector<StepHistory> m_stepHistories;
    std::map<int, QStringList> m_alerted; // rank -> messages of the active alerts naming it
    int m_cpuThreads = 1;
    bool m_ended = false;
};

} // namespace parallax

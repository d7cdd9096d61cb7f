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
// host (HostStatus: answering, silent, lost) marks the host's row. It also keeps every rank's
// utilization over time for the heat map.
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
    // reset: `samples` are the run's whole history (the hosts of run_start and the host statuses
    // stay).
    void addSamples(const std::vector<DeviceEvent>& samples, bool reset);
    // Each rank's host, from run_start.
    void setRankHosts(const std::vector<std::string>& hosts);
    // The supervisor's latest view of each host (RunStore::hostStatuses).
    void setHostStatuses(const std::vector<HostStatus>& statuses);
    const std::vector<HostStatus>& hostStatuses() const { return m_hostStatuses; }
    // The status of a row's host: the one of the same name, or of the same name up to the
    // domain ("node2" and "node2.cluster.local"); nullptr when none.
    const HostStatus* hostStatus(int row) const;
    static bool isAlarm(const HostStatus& status) { return status.state == "silent" || status.state == "lost"; }
    // "node2 silent for 12 s (ssh: ...)", "node3 lost (...)".
    static QString hostStatusText(const HostStatus& status);

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
    void resetSamples();  // forgets the samples (within a reset)
    static double utilizationOf(const DeviceEvent& e);

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
};

} // namespace parallax

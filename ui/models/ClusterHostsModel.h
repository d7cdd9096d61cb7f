#pragma once

#include "core/launch/Preflight.h"

#include <QAbstractTableModel>
#include <QString>
#include <QStringList>

#include <string>
#include <vector>

namespace parallax {

// The hosts of a cluster profile and what preflight found on each, one row per host in the
// profile's order: whether ssh answers and how fast, the host's own name, cores, GPUs (from
// nvidia-smi), whether the worker there is the same build as here, load, Parallax ranks running
// there, and preflight's problems (each naming the host and the fix) and notes.
class ClusterHostsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        HostColumn,
        SlotsColumn,
        StateColumn,
        HostnameColumn,
        LatencyColumn,
        CoresColumn,
        GpusColumn,
        WorkerColumn,
        LoadColumn,
        RanksColumn,
        ProblemsColumn,
        ColumnCount
    };
    enum class HostState { NotChecked, Checking, Reachable, NotReachable };
    enum class WorkerState { Unknown, Same, Other, Missing, NothingHere };
    enum Role {
        HostStateRole = Qt::UserRole + 1, // int(HostState)
        WorkerStateRole,                  // int(WorkerState)
        ProblemsRole,                     // QStringList
        NotesRole,                        // QStringList
    };

    explicit ClusterHostsModel(QObject* parent = nullptr);

    // The profile's hosts ("name:slots"), not checked yet.
    void setHosts(const std::vector<std::string>& entries);
    // Every row shows "checking…" until setChecks (or setChecking(false), which shows the rows as
    // they were).
    void setChecking(bool checking);
    bool isChecking() const { return m_checking; }
    // What preflight found; `localBuild` is the SHA-256 of the worker here ("" when there is
    // none here to compare with).
    void setChecks(const std::vector<HostCheck>& checks, const std::string& localBuild);
    void clear();

    const std::vector<HostCheck>& checks() const { return m_checks; }
    bool checked() const { return m_checked; }
    HostState state(int row) const;
    WorkerState workerState(int row) const;
    // "2 × NVIDIA H200 (140.4 GiB each)" from preflight's "NVIDIA H200, 143771 MiB" per GPU.
    static QString gpuSummary(const std::vector<std::string>& gpus);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    QString text(int row, int column) const;
    QString toolTip(int row, int column) const;
    void emitAllChanged();

    std::vector<HostCheck> m_checks; // one per host; only the host and slots until checked
    std::string m_localBuild;
    bool m_checked = false;
    bool m_checking = false;
};

} // namespace parallax

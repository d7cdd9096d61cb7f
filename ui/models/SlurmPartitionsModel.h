#pragma once

#include "core/launch/SlurmJobs.h"

#include <QAbstractTableModel>
#include <QDateTime>
#include <QString>

#include <vector>

namespace parallax {

// The partitions of the Slurm this console reaches (sinfo), with their idle and allocated nodes
// and CPUs: where a run with launch.target = "slurm" can go. refresh() asks sinfo on a thread of
// its own; the rows change when it answers.
class SlurmPartitionsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        NameColumn,
        AvailabilityColumn,
        IdleNodesColumn,
        AllocatedNodesColumn,
        OtherNodesColumn,
        NodesColumn,
        IdleCpusColumn,
        CpusColumn,
        TimeLimitColumn,
        ColumnCount
    };

    explicit SlurmPartitionsModel(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    // Asks sinfo again unless an answer is on its way; false when one is.
    bool refresh();
    bool isLoading() const { return m_loading; }
    // What the last answer said: "2 partitions, 14:03:12", or why there is none.
    QString statusText() const;
    const std::vector<SlurmPartition>& partitions() const { return m_partitions; }
    // Installs the source of the answers (tests); default querySlurmPartitions.
    void setQuery(std::function<SlurmPartitions()> query) { m_query = std::move(query); }

signals:
    void loaded();

private:
    std::vector<SlurmPartition> m_partitions;
    QString m_error;
    QDateTime m_at;
    bool m_loading = false;
    std::function<SlurmPartitions()> m_query;
};

} // namespace parallax

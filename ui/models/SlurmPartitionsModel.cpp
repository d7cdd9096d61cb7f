#include "ui/models/SlurmPartitionsModel.h"

#include <QBrush>
#include <QColor>
#include <QThread>

#include <memory>

namespace parallax {

SlurmPartitionsModel::SlurmPartitionsModel(QObject* parent)
    : QAbstractTableModel(parent), m_query([] { return querySlurmPartitions(); }) {}

int SlurmPartitionsModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(m_partitions.size());
}

int SlurmPartitionsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant SlurmPartitionsModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
    case NameColumn: return tr("Partition");
    case AvailabilityColumn: return tr("State");
    case IdleNodesColumn: return tr("Idle nodes");
    case AllocatedNodesColumn: return tr("Allocated");
    case OtherNodesColumn: return tr("Down / drained");
    case NodesColumn: return tr("Nodes");
    case IdleCpusColumn: return tr("Idle CPUs");
    case CpusColumn: return tr("CPUs");
    case TimeLimitColumn: return tr("Time limit");
    default: return {};
    }
}

QVariant SlurmPartitionsModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= int(m_partitions.size())) return {};
    const SlurmPartition& p = m_partitions[size_t(index.row())];
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
        case NameColumn:
            return QString::fromStdString(p.name) + (p.is_default ? tr(" (default)") : QString());
        case AvailabilityColumn: return QString::fromStdString(p.availability);
        case IdleNodesColumn: return qlonglong(p.nodes_idle);
        case AllocatedNodesColumn: return qlonglong(p.nodes_allocated);
        case OtherNodesColumn: return qlonglong(p.nodes_other);
        case NodesColumn: return qlonglong(p.nodes_total);
        case IdleCpusColumn: return qlonglong(p.cpus_idle);
        case CpusColumn: return qlonglong(p.cpus_total);
        case TimeLimitColumn: return QString::fromStdString(p.time_limit);
        default: return {};
        }
    }
    if (role == Qt::TextAlignmentRole && index.column() >= IdleNodesColumn && index.column() <= CpusColumn)
        return int(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::ForegroundRole && index.column() == AvailabilityColumn && p.availability != "up")
        return QBrush(QColor(0xb7, 0x1c, 0x1c));
    if (role == Qt::ToolTipRole)
        return tr("%1: %2 of %3 node(s) idle, %4 allocated, %5 down or drained; %6 of %7 CPU(s) idle; "
                  "jobs may run %8")
            .arg(QString::fromStdString(p.name))
            .arg(p.nodes_idle)
            .arg(p.nodes_total)
            .arg(p.nodes_allocated)
            .arg(p.nodes_other)
            .arg(p.cpus_idle)
            .arg(p.cpus_total)
            .arg(p.time_limit == "infinite" ? tr("without a time limit") : tr("at most %1").arg(QString::fromStdString(p.time_limit)));
    return {};
}

bool SlurmPartitionsModel::refresh() {
    if (m_loading) return false;
    m_loading = true;
    auto answer = std::make_shared<SlurmPartitions>();
    QThread* thread = QThread::create([answer, query = m_query] {
        try {
            *answer = query();
        } catch (const std::exception& e) {
            answer->error = e.what();
        }
    });
    thread->setObjectName(QStringLiteral("sinfo"));
    connect(thread, &QThread::finished, this, [this, answer] {
        beginResetModel();
        m_partitions = std::move(answer->partitions);
        m_error = QString::fromStdString(answer->error);
        m_at = QDateTime::currentDateTime();
        endResetModel();
        m_loading = false;
        emit loaded();
    });
    connect(thread, &QThread::finished, thread, &QObject::deleteLater);
    thread->start();
    return true;
}

QString SlurmPartitionsModel::statusText() const {
    if (m_loading) return tr("asking Slurm (sinfo)…");
    if (!m_at.isValid()) return QString();
    if (m_partitions.empty()) return tr("No Slurm here: %1").arg(m_error);
    return tr("%n partition(s), as of %1", nullptr, int(m_partitions.size())).arg(m_at.toString(QStringLiteral("HH:mm:ss")));
}

} // namespace parallax

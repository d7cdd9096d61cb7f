#include "ui/models/SpecDiffModel.h"

#include "core/spec/SpecCompare.h"

#include <QBrush>
#include <QColor>

#include <map>

namespace parallax {

namespace {

// An index of a cell of this table; views also ask about the root, which has no data.
bool isCell(const QAbstractItemModel* model, const QModelIndex& index) {
    return index.isValid() && index.model() == model && !index.parent().isValid() && index.row() < model->rowCount() &&
           index.column() < model->columnCount();
}

} // namespace

SpecDiffModel::SpecDiffModel(QObject* parent) : QAbstractTableModel(parent) {}

void SpecDiffModel::setRuns(const std::vector<CompareRun>& runs) {
    beginResetModel();
    m_titles.clear();
    m_fields.clear();
    m_values.clear();
    m_readable.clear();

    int reference = -1; // the first readable spec: every other is compared with it
    for (size_t i = 0; i < runs.size(); ++i) {
        m_titles << runs[i].title();
        m_readable.push_back(runs[i].spec.has_value());
        if (reference < 0 && runs[i].spec) reference = int(i);
    }
    if (reference >= 0) {
        const RunSpec& base = *runs[size_t(reference)].spec;
        // Per field: the reference's value and, per run, its value where it differs.
        std::vector<std::string> order;
        std::map<std::string, std::string> baseValue;
        std::map<std::string, std::map<size_t, std::string>> otherValue;
        for (size_t i = 0; i < runs.size(); ++i) {
            if (!runs[i].spec || int(i) == reference) continue;
            for (const SpecDifference& d : specDifferences(base, *runs[i].spec)) {
                if (!baseValue.count(d.field)) {
                    order.push_back(d.field);
                    baseValue[d.field] = d.left;
                }
                otherValue[d.field][i] = d.right;
            }
        }
        for (const std::string& field : order) {
            m_fields << QString::fromStdString(field);
            QStringList row;
            for (size_t i = 0; i < runs.size(); ++i) {
                if (!runs[i].spec) {
                    row << QString();
                    continue;
                }
                const auto& others = otherValue[field];
                const auto it = others.find(i);
                row << QString::fromStdString(it != others.end() ? it->second : baseValue[field]);
            }
            m_values.push_back(row);
        }
    }
    endResetModel();
}

QString SpecDiffModel::value(int row, int column) const {
    if (row < 0 || row >= int(m_values.size()) || column < 0 || column >= m_values[size_t(row)].size()) return {};
    return m_values[size_t(row)][column];
}

int SpecDiffModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(m_fields.size());
}

int SpecDiffModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(m_titles.size());
}

QVariant SpecDiffModel::data(const QModelIndex& index, int role) const {
    if (!isCell(this, index)) return {};
    const bool readable = m_readable[size_t(index.column())];
    switch (role) {
    case Qt::DisplayRole: {
        if (!readable) return tr("(spec unreadable)");
        const QString v = value(index.row(), index.column());
        return v.isEmpty() ? tr("(unset)") : v;
    }
    case Qt::ToolTipRole: return QStringLiteral("%1 = %2").arg(m_fields[index.row()], value(index.row(), index.column()));
    case Qt::ForegroundRole:
        if (!readable || value(index.row(), index.column()).isEmpty()) return QBrush(QColor(0x80, 0x80, 0x80));
        return {};
    default: return {};
    }
}

QVariant SpecDiffModel::headerData(int section, Qt::Orientation orientation, int role) const {
    // A run's column title elides in a narrow window; its tooltip has it whole.
    if (role != Qt::DisplayRole && !(role == Qt::ToolTipRole && orientation == Qt::Horizontal)) return {};
    if (orientation == Qt::Horizontal) return section >= 0 && section < m_titles.size() ? m_titles[section] : QVariant();
    return section >= 0 && section < m_fields.size() ? m_fields[section] : QVariant();
}

} // namespace parallax

#include "ui/models/RunFilterModel.h"

#include "ui/models/RunListModel.h"

namespace parallax {

RunFilterModel::RunFilterModel(QObject* parent) : QSortFilterProxyModel(parent) {
    setSortRole(RunListModel::SortRole);
    setDynamicSortFilter(true);
}

void RunFilterModel::setSourceModel(QAbstractItemModel* source) {
    m_runs = qobject_cast<RunListModel*>(source);
    QSortFilterProxyModel::setSourceModel(source);
}

void RunFilterModel::setFilterText(const QString& text) {
    if (text == m_text) return;
    m_text = text;
    m_words = text.toLower().split(QChar(' '), Qt::SkipEmptyParts);
    invalidateRowsFilter();
}

void RunFilterModel::setStates(const QSet<QString>& states) {
    if (states == m_states) return;
    m_states = states;
    invalidateRowsFilter();
}

bool RunFilterModel::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const {
    if (sourceParent.isValid()) return false;
    if (!m_runs) return QSortFilterProxyModel::filterAcceptsRow(sourceRow, sourceParent);
    if (!m_states.isEmpty() &&
        !m_states.contains(QString::fromStdString(runStateName(m_runs->record(sourceRow).state))))
        return false;
    const QString& text = m_runs->searchText(sourceRow);
    for (const QString& word : m_words)
        if (!text.contains(word)) return false;
    return true;
}

bool RunFilterModel::lessThan(const QModelIndex& left, const QModelIndex& right) const {
    if (!m_runs) return QSortFilterProxyModel::lessThan(left, right);
    const int column = left.column();
    if (column == RunListModel::IdColumn) return m_runs->record(left.row()).id < m_runs->record(right.row()).id;
    const std::optional<double> a = m_runs->sortNumber(left.row(), column);
    const std::optional<double> b = m_runs->sortNumber(right.row(), column);
    if (a || b || column == RunListModel::LossColumn || column == RunListModel::TokensPerSecondColumn ||
        column == RunListModel::MfuColumn || column == RunListModel::DurationColumn ||
        column == RunListModel::StepsColumn) {
        // Runs without the figure sort after those with it in either direction.
        if (a && b) return *a < *b;
        if (!a && !b) return m_runs->record(left.row()).id < m_runs->record(right.row()).id;
        return (sortOrder() == Qt::AscendingOrder) ? bool(a) : bool(b);
    }
    const int order = QString::compare(left.data(Qt::DisplayRole).toString(), right.data(Qt::DisplayRole).toString(),
                                       Qt::CaseInsensitive);
    if (order != 0) return order < 0;
    return m_runs->record(left.row()).id < m_runs->record(right.row()).id;
}

} // namespace parallax

#include "ui/models/RunCheckModel.h"

#include "ui/models/RunListModel.h"

#include <algorithm>

namespace parallax {

RunCheckModel::RunCheckModel(QObject* parent) : QIdentityProxyModel(parent) {}

QList<qint64> RunCheckModel::checkedRuns() const {
    QList<qint64> ids(m_checked.begin(), m_checked.end());
    std::sort(ids.begin(), ids.end());
    return ids;
}

void RunCheckModel::setCheckedRuns(const QList<qint64>& ids) {
    const QSet<qint64> next(ids.begin(), ids.end());
    if (next == m_checked) return;
    m_checked = next;
    if (rowCount() > 0) emit dataChanged(index(0, 0), index(rowCount() - 1, 0), {Qt::CheckStateRole});
    emit checkedChanged(checkedRuns());
}

QVariant RunCheckModel::data(const QModelIndex& index, int role) const {
    if (role == Qt::CheckStateRole && index.isValid() && index.column() == 0) {
        const qint64 id = QIdentityProxyModel::data(index, RunListModel::RunIdRole).toLongLong();
        return m_checked.contains(id) ? Qt::Checked : Qt::Unchecked;
    }
    return QIdentityProxyModel::data(index, role);
}

bool RunCheckModel::setData(const QModelIndex& index, const QVariant& value, int role) {
    if (role != Qt::CheckStateRole || !index.isValid() || index.column() != 0)
        return QIdentityProxyModel::setData(index, value, role);
    const qint64 id = QIdentityProxyModel::data(index, RunListModel::RunIdRole).toLongLong();
    const bool on = value.toInt() == Qt::Checked;
    if (on == m_checked.contains(id)) return true;
    if (on) m_checked.insert(id);
    else m_checked.remove(id);
    emit dataChanged(index, index, {Qt::CheckStateRole});
    emit checkedChanged(checkedRuns());
    return true;
}

Qt::ItemFlags RunCheckModel::flags(const QModelIndex& index) const {
    Qt::ItemFlags f = QIdentityProxyModel::flags(index);
    if (index.isValid() && index.column() == 0) f |= Qt::ItemIsUserCheckable;
    return f;
}

} // namespace parallax

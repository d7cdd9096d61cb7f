#pragma once

#include <QIdentityProxyModel>
#include <QList>
#include <QSet>

namespace parallax {

// Runs with a check box in the first column, for picking the runs to compare. Checks belong to
// run ids (RunListModel::RunIdRole), so they survive filtering, sorting and refreshes.
class RunCheckModel : public QIdentityProxyModel {
    Q_OBJECT
public:
    explicit RunCheckModel(QObject* parent = nullptr);

    QList<qint64> checkedRuns() const; // ascending
    void setCheckedRuns(const QList<qint64>& ids);
    bool isChecked(qint64 id) const { return m_checked.contains(id); }

    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;

signals:
    void checkedChanged(const QList<qint64>& ids);

private:
    QSet<qint64> m_checked;
};

} // namespace parallax

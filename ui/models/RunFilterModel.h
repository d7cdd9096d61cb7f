#pragma once

#include <QSet>
#include <QSortFilterProxyModel>
#include <QString>

namespace parallax {

class RunListModel;

// Filters the runs by text (every word must appear in the id, name, state, model, layout, tags or
// notes, case-insensitively) and by state, and sorts them by any column: numbers as numbers, runs
// without the figure last. Reads RunListModel's rows directly so that 10,000 runs filter without
// building a QVariant per cell.
class RunFilterModel : public QSortFilterProxyModel {
    Q_OBJECT
public:
    explicit RunFilterModel(QObject* parent = nullptr);

    void setSourceModel(QAbstractItemModel* source) override;

    void setFilterText(const QString& text);
    QString filterText() const { return m_text; }
    // Empty: every state.
    void setStates(const QSet<QString>& states);
    const QSet<QString>& states() const { return m_states; }

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;
    bool lessThan(const QModelIndex& left, const QModelIndex& right) const override;

private:
    RunListModel* m_runs = nullptr;
    QString m_text;
    QStringList m_words;
    QSet<QString> m_states;
};

} // namespace parallax

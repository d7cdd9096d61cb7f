#pragma once

#include "ui/models/CompareRun.h"

#include <QAbstractTableModel>
#include <QString>
#include <QStringList>

#include <vector>

namespace parallax {

// How the specs of several runs differ: one row per field whose value is not the same in every
// run (unknown keys kept in the specs included), one column per run, values as TOML text. Runs
// whose spec cannot be read get a column of their own that says so and take no part in the
// comparison.
class SpecDiffModel : public QAbstractTableModel {
    Q_OBJECT
public:
    explicit SpecDiffModel(QObject* parent = nullptr);

    void setRuns(const std::vector<CompareRun>& runs);

    QStringList fields() const { return m_fields; }
    QString value(int row, int column) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    QStringList m_titles;              // per run
    QStringList m_fields;              // per row
    std::vector<QStringList> m_values; // per row, per run
    std::vector<bool> m_readable;      // per run
};

} // namespace parallax

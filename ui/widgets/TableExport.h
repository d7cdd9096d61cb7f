#pragma once

#include "ui/models/PlotTable.h"

#include <QList>
#include <QModelIndexList>
#include <QObject>
#include <QString>

class QAbstractItemModel;
class QAction;
class QTableView;

namespace parallax {

// Copy and Export CSV… for a table of the console: installed on a QTableView, it adds both to the
// view's right-click menu (and Ctrl+C). Copy puts the selected cells on the clipboard as
// tab-separated rows under their column headers, which spreadsheets paste cell by cell, as the table
// shows them. Export CSV… writes every row the view shows (its filter and sort order) with the
// header, as RFC 4180 CSV, for programs to read: where the model answers RawValueRole (TableRoles.h)
// the cells are its raw values (numbers as numbers, durations in seconds), else the text shown.
class TableExport : public QObject {
    Q_OBJECT
public:
    // A view whose menu is its own (Qt::CustomContextMenu) adds actions() to that menu itself.
    static TableExport* install(QTableView* view, const QString& baseName);

    // What a cell is written as: the text shown, or its raw value where the model gives one.
    enum class Cells { Shown, Raw };
    // The rows of `model` (every row and column, or those of `cells` where given) under a header,
    // leaving out the columns in `hidden`.
    static PlotTable table(const QAbstractItemModel& model, const QModelIndexList& cells = {},
                           Cells what = Cells::Shown, const QList<int>& hidden = {});
    // Tab-separated rows of the selected cells under their headers (what Copy puts on the clipboard).
    QString selectionText() const;
    bool saveCsv(const QString& path, QString* error = nullptr) const;

    QAction* copyAction() const { return m_copy; }
    QAction* exportAction() const { return m_export; }
    QList<QAction*> actions() const { return {m_copy, m_export}; }

private:
    TableExport(QTableView* view, const QString& baseName);
    QTableView* m_view;
    QString m_baseName;
    QAction* m_copy;
    QAction* m_export;
};

} // namespace parallax

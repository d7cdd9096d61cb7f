#pragma once

#include "ui/models/PlotTable.h"

#include <QModelIndexList>
#include <QObject>
#include <QString>

class QAbstractItemModel;
class QAction;
class QTableView;

namespace parallax {

// Copy and Export CSV… for a table of the console: installed on a QTableView, it adds both to the
// view's right-click menu (and Ctrl+C). Copy puts the selected cells on the clipboard as
// tab-separated rows, which spreadsheets paste cell by cell; Export CSV… writes every row the view
// shows (its filter and sort order) with the header, as RFC 4180 CSV. Cells are the display text.
class TableExport : public QObject {
    Q_OBJECT
public:
    // A view whose menu is its own (Qt::CustomContextMenu) adds actions() to that menu itself.
    static TableExport* install(QTableView* view, const QString& baseName);

    // The rows of `model` (every row and column, or those of `cells` where given) with a header.
    static PlotTable table(const QAbstractItemModel& model, const QModelIndexList& cells = {});
    // Tab-separated rows of the selected cells, without a header (what Copy puts on the clipboard).
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

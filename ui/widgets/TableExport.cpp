#include "ui/widgets/TableExport.h"

#include "ui/models/AtomicFile.h"
#include "ui/widgets/FileDialogs.h"

#include <QAbstractItemModel>
#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QDir>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QMessageBox>
#include <QRegularExpression>
#include <QTableView>

#include <algorithm>
#include <map>
#include <set>

namespace parallax {

TableExport* TableExport::install(QTableView* view, const QString& baseName) {
    return new TableExport(view, baseName);
}

TableExport::TableExport(QTableView* view, const QString& baseName)
    : QObject(view), m_view(view), m_baseName(baseName) {
    m_copy = new QAction(tr("Copy"), view);
    m_copy->setShortcut(QKeySequence::Copy);
    m_copy->setShortcutContext(Qt::WidgetShortcut);
    m_copy->setToolTip(tr("The selected cells, tab-separated"));
    m_export = new QAction(tr("Export CSV…"), view);
    m_export->setToolTip(tr("Every row the table shows, with its header, as CSV"));
    view->addAction(m_copy);
    view->addAction(m_export);
    if (view->contextMenuPolicy() == Qt::DefaultContextMenu) view->setContextMenuPolicy(Qt::ActionsContextMenu);
    connect(m_copy, &QAction::triggered, this, [this] {
        const QString text = selectionText();
        if (!text.isEmpty()) QApplication::clipboard()->setText(text);
    });
    connect(m_export, &QAction::triggered, this, [this] {
        QString base = m_baseName;
        base.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9._-]+")), QStringLiteral("-"));
        QString path = FileDialogs::saveFile(m_view, tr("Export the table as CSV"),
                                             QDir::home().filePath(base + QStringLiteral(".csv")), tr("CSV files (*.csv)"));
        if (path.isEmpty()) return;
        if (!path.endsWith(QStringLiteral(".csv"), Qt::CaseInsensitive)) path += QStringLiteral(".csv");
        QString error;
        if (!saveCsv(path, &error)) QMessageBox::warning(m_view, tr("Export CSV"), error);
    });
}

PlotTable TableExport::table(const QAbstractItemModel& model, const QModelIndexList& cells) {
    PlotTable t;
    std::set<int> columns;
    std::map<int, std::map<int, QString>> byRow;
    if (cells.isEmpty()) {
        for (int c = 0; c < model.columnCount(); ++c) columns.insert(c);
        for (int r = 0; r < model.rowCount(); ++r)
            for (int c : columns) byRow[r][c] = model.index(r, c).data(Qt::DisplayRole).toString();
    } else {
        for (const QModelIndex& i : cells) {
            columns.insert(i.column());
            byRow[i.row()][i.column()] = i.data(Qt::DisplayRole).toString();
        }
    }
    for (int c : columns) t.header << model.headerData(c, Qt::Horizontal, Qt::DisplayRole).toString();
    for (const auto& [row, values] : byRow) {
        QStringList line;
        for (int c : columns) {
            const auto it = values.find(c);
            line << (it == values.end() ? QString() : it->second);
        }
        t.rows.push_back(line);
    }
    return t;
}

QString TableExport::selectionText() const {
    if (!m_view->model() || !m_view->selectionModel()) return {};
    QModelIndexList cells = m_view->selectionModel()->selectedIndexes();
    // Hidden columns are not part of what a person sees selected.
    cells.erase(std::remove_if(cells.begin(), cells.end(),
                               [this](const QModelIndex& i) { return m_view->isColumnHidden(i.column()); }),
                cells.end());
    if (cells.isEmpty()) return {};
    const PlotTable t = table(*m_view->model(), cells);
    QStringList lines;
    for (const QStringList& row : t.rows) {
        QStringList cellsOfRow;
        for (QString cell : row) cellsOfRow << cell.replace(QChar('\t'), QChar(' ')).replace(QChar('\n'), QChar(' '));
        lines << cellsOfRow.join(QChar('\t'));
    }
    return lines.join(QChar('\n')) + QChar('\n');
}

bool TableExport::saveCsv(const QString& path, QString* error) const {
    if (!m_view->model()) {
        if (error) *error = tr("The table is empty");
        return false;
    }
    PlotTable t = table(*m_view->model());
    // Columns the view hides are left out, as they are from the screen.
    for (int c = m_view->model()->columnCount() - 1; c >= 0; --c) {
        if (!m_view->isColumnHidden(c)) continue;
        t.header.removeAt(c);
        for (QStringList& row : t.rows) row.removeAt(c);
    }
    return writeFileAtomically(path, t.toCsv(), error);
}

} // namespace parallax

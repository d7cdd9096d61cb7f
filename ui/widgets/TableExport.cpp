#include "ui/widgets/TableExport.h"

#include "ui/models/AtomicFile.h"
#include "ui/models/RunMetricsCsv.h"
#include "ui/models/TableRoles.h"
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
    m_copy->setToolTip(tr("The selected cells under their column headers, tab-separated"));
    m_export = new QAction(tr("Export CSV…"), view);
    m_export->setToolTip(tr("Every row the table shows, with its header, as CSV: numbers as numbers, durations in seconds"));
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

namespace {

// A raw value as a cell of a file: numbers in their shortest exact form, as parallax-cli writes
// them; a missing value as an empty cell.
QString rawText(const QVariant& v) {
    if (!v.isValid() || v.isNull()) return {};
    if (v.typeId() == QMetaType::Double || v.typeId() == QMetaType::Float) return QString::fromStdString(csvNumber(v.toDouble()));
    return v.toString();
}

// How a column is written: the names of its header cells, and whether its cells are raw values.
struct ColumnCells {
    int column = 0;
    QStringList names;
    bool raw = false;
};

ColumnCells columnCells(const QAbstractItemModel& model, int column, TableExport::Cells what) {
    ColumnCells c;
    c.column = column;
    const QVariant raw = what == TableExport::Cells::Raw ? model.headerData(column, Qt::Horizontal, RawValueRole) : QVariant();
    c.raw = raw.isValid();
    if (raw.typeId() == QMetaType::QStringList) c.names = raw.toStringList();
    else c.names << (c.raw ? raw.toString() : model.headerData(column, Qt::Horizontal, Qt::DisplayRole).toString());
    return c;
}

// The cells of `index` under the column's names: one, or one per field of a raw list.
void appendCells(QStringList& line, const ColumnCells& c, const QModelIndex& index) {
    QStringList cells;
    if (index.isValid() && !c.raw) {
        cells << index.data(Qt::DisplayRole).toString();
    } else if (index.isValid()) {
        const QVariant raw = index.data(RawValueRole);
        if (raw.typeId() == QMetaType::QVariantList)
            for (const QVariant& v : raw.toList()) cells << rawText(v);
        else cells << rawText(raw);
    }
    for (int i = 0; i < c.names.size(); ++i) line << (i < cells.size() ? cells[i] : QString());
}

} // namespace

PlotTable TableExport::table(const QAbstractItemModel& model, const QModelIndexList& cells, Cells what,
                             const QList<int>& hidden) {
    std::set<int> columns;
    std::map<int, std::set<int>> byRow; // the cells given, by row
    if (cells.isEmpty())
        for (int c = 0; c < model.columnCount(); ++c) columns.insert(c);
    for (const QModelIndex& i : cells) {
        if (hidden.contains(i.column())) continue;
        columns.insert(i.column());
        byRow[i.row()].insert(i.column());
    }
    for (int c : hidden) columns.erase(c);
    std::vector<ColumnCells> layout;
    PlotTable t;
    for (int c : columns) {
        layout.push_back(columnCells(model, c, what));
        t.header << layout.back().names;
    }
    const auto addRow = [&](int row, const std::set<int>* present) {
        QStringList line;
        for (const ColumnCells& c : layout)
            appendCells(line, c, !present || present->count(c.column) ? model.index(row, c.column) : QModelIndex());
        t.rows.push_back(line);
    };
    if (cells.isEmpty())
        for (int r = 0; r < model.rowCount(); ++r) addRow(r, nullptr);
    for (const auto& [row, present] : byRow) addRow(row, &present);
    return t;
}

QString TableExport::selectionText() const {
    if (!m_view->model() || !m_view->selectionModel()) return {};
    const QModelIndexList cells = m_view->selectionModel()->selectedIndexes();
    if (cells.isEmpty()) return {};
    // Hidden columns are not part of what a person sees selected.
    QList<int> hidden;
    for (int c = 0; c < m_view->model()->columnCount(); ++c)
        if (m_view->isColumnHidden(c)) hidden << c;
    const PlotTable t = table(*m_view->model(), cells, Cells::Shown, hidden);
    if (t.header.isEmpty()) return {};
    QStringList lines;
    const auto tabbed = [](QStringList row) {
        for (QString& cell : row) cell.replace(QChar('\t'), QChar(' ')).replace(QChar('\n'), QChar(' '));
        return row.join(QChar('\t'));
    };
    lines << tabbed(t.header);
    for (const QStringList& row : t.rows) lines << tabbed(row);
    return lines.join(QChar('\n')) + QChar('\n');
}

bool TableExport::saveCsv(const QString& path, QString* error) const {
    if (!m_view->model()) {
        if (error) *error = tr("The table is empty");
        return false;
    }
    // Columns the view hides are left out, as they are from the screen.
    QList<int> hidden;
    for (int c = 0; c < m_view->model()->columnCount(); ++c)
        if (m_view->isColumnHidden(c)) hidden << c;
    return writeFileAtomically(path, table(*m_view->model(), {}, Cells::Raw, hidden).toCsv(), error);
}

} // namespace parallax

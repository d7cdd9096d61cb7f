#include "ui/pages/RunsPage.h"
#include "ui/widgets/TableExport.h"
#include "ui/widgets/FileDialogs.h"

#include "core/store/StoreTypes.h"
#include "ui/models/ResumeCheck.h"
#include "ui/models/ResumeStepReader.h"
#include "ui/models/RunDeleter.h"
#include "ui/models/RunFilterModel.h"
#include "ui/models/RunLauncher.h"
#include "ui/models/RunColors.h"
#include "ui/models/RunListModel.h"
#include "ui/models/RunStoreThread.h"
#include "ui/models/AtomicFile.h"
#include "ui/models/RunExporter.h"
#include "ui/models/StoreWatcher.h"
#include "ui/widgets/EditHoldDelegate.h"
#include "ui/pages/ModelExportAction.h"
#include "ui/pages/RunDetailPane.h"

#include <QPainter>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QSaveFile>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>
#include <map>

namespace parallax {

RunsPage::RunsPage(RunListModel* runs, StoreWatcher* watcher, RunStoreThread* writer, QWidget* parent)
    : QWidget(parent), m_runs(runs), m_watcher(watcher), m_writer(writer), m_filter(new RunFilterModel(this)),
      m_launcher(new RunLauncher(this)), m_exporter(new RunExporter(watcher, this)),
      m_deleter(new RunDeleter(writer, this)) {
    connect(m_exporter, &RunExporter::finished, this, [this](const QString& path, const QString& message) {
        emit statusMessage(message);
        emit exportFinished(path);
    });
    connect(m_exporter, &RunExporter::failed, this, &RunsPage::exportFailed);
    m_filter->setSourceModel(m_runs);

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(buildFilterBar());
    // The table over the selected run's detail pane; MainWindow keeps the split per store.
    m_splitter = new QSplitter(Qt::Vertical, this);
    m_splitter->setChildrenCollapsible(false);
    m_splitter->addWidget(buildTable());
    m_detail = new RunDetailPane(m_runs, watcher, m_splitter);
    m_splitter->addWidget(m_detail);
    m_splitter->setStretchFactor(0, 3);
    m_splitter->setStretchFactor(1, 2);
    layout->addWidget(m_splitter, 1);
    layout->addLayout(buildActions());
    layout->addWidget(m_modelExport->statusLabel());
    connectActions();

    // Resumed runs show the step they resumed at, from their run_start.
    new ResumeStepReader(m_runs, watcher, this);

    updateCount();
    updateActions();
}

// The text and state filters over the table, with the count of runs shown.
QHBoxLayout* RunsPage::buildFilterBar() {
    auto* top = new QHBoxLayout;
    m_filterEdit = new QLineEdit(this);
    m_filterEdit->setPlaceholderText(tr("Filter by id, name, model, layout, tags or notes"));
    m_filterEdit->setClearButtonEnabled(true);
    top->addWidget(m_filterEdit, 1);
    m_state = new QComboBox(this);
    m_state->addItem(tr("All states"), QString());
    for (const RunState state : {RunState::Running, RunState::Queued, RunState::Succeeded, RunState::Failed,
                                 RunState::Stopped, RunState::Lost}) {
        const QString name = QString::fromStdString(runStateName(state));
        m_state->addItem(name, name);
        m_state->setItemData(m_state->count() - 1, RunColors::stateColor(state), Qt::ForegroundRole);
    }
    top->addWidget(m_state);
    m_count = new QLabel(this);
    top->addWidget(m_count);
    return top;
}

QTableView* RunsPage::buildTable() {
    m_view = new QTableView(this);
    m_view->setModel(m_filter);
    m_view->setSortingEnabled(true);
    m_view->sortByColumn(RunListModel::IdColumn, Qt::DescendingOrder);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_view->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed |
                            QAbstractItemView::SelectedClicked);
    // Rows re-sort as runs train; while a tag or note is typed the order holds, so that the row
    // under the editor stays the run it was opened on, and it sorts again when the editor closes.
    auto* delegate = new EditHoldDelegate(m_view);
    m_view->setItemDelegate(delegate);
    connect(delegate, &EditHoldDelegate::editingStarted, this, [this] { m_filter->setDynamicSortFilter(false); });
    connect(delegate, &EditHoldDelegate::editingFinished, this, [this] { m_filter->setDynamicSortFilter(true); });
    m_view->setAlternatingRowColors(true);
    m_view->setWordWrap(false);
    m_view->setContextMenuPolicy(Qt::CustomContextMenu);
    m_tableExport = TableExport::install(m_view, QStringLiteral("runs"));
    m_view->verticalHeader()->hide();
    m_view->verticalHeader()->setDefaultSectionSize(m_view->fontMetrics().height() + 8);
    m_view->horizontalHeader()->setStretchLastSection(true);
    m_view->horizontalHeader()->setHighlightSections(false);
    // Fixed widths from typical contents: sizing to contents would visit every one of thousands of rows.
    const QFontMetrics fm = m_view->fontMetrics();
    const std::pair<int, const char*> widths[] = {
        {RunListModel::IdColumn, "00000"},           {RunListModel::StateColumn, "succeeded"},
        {RunListModel::NameColumn, "qwen-image-lora-dp2"}, {RunListModel::ModelColumn, "qwen_image_vae"},
        {RunListModel::LayoutColumn, "dp16 tp2 pp2 zero3"}, {RunListModel::StepsColumn, "1000 / 1000"},
        {RunListModel::LossColumn, "0.0000"},        {RunListModel::TokensPerSecondColumn, "Tokens/s"},
        {RunListModel::MfuColumn, "MFU"},            {RunListModel::DurationColumn, "00m 00s"},
        {RunListModel::CreatedColumn, "0000-00-00 00:00"}, {RunListModel::TagsColumn, "baseline"},
        {RunListModel::BaseModelColumn, "Qwen2.5-VL-3B-Instruct"}, {RunListModel::FinetuneColumn, "LoRA r 16"}};
    for (const auto& [column, sample] : widths)
        m_view->setColumnWidth(column, fm.horizontalAdvance(QString::fromLatin1(sample)) + 16);
    // The base model and finetune mode come last in the model (a saved header state keeps its
    // columns) and are shown after Model; a restored state puts them where they were left.
    QHeaderView* header = m_view->horizontalHeader();
    header->moveSection(header->visualIndex(RunListModel::BaseModelColumn), header->visualIndex(RunListModel::ModelColumn) + 1);
    header->moveSection(header->visualIndex(RunListModel::FinetuneColumn), header->visualIndex(RunListModel::BaseModelColumn) + 1);
    return m_view;
}

// The buttons under the table that act on the selected runs.
QHBoxLayout* RunsPage::buildActions() {
    auto* actions = new QHBoxLayout;
    m_open = new QPushButton(tr("Open"), this);
    m_open->setToolTip(tr("Show the run on the Live page"));
    m_resume = new QPushButton(tr("Resume"), this);
    m_resumeTip = tr("Continue a stopped, failed or lost run from its last checkpoint (parallax-cli resume)");
    m_resume->setToolTip(m_resumeTip);
    m_compare = new QPushButton(tr("Compare"), this);
    m_compare->setToolTip(tr("Compare the selected runs"));
    m_exportMetrics = new QPushButton(tr("Export metrics…"), this);
    m_exportTrace = new QPushButton(tr("Export trace…"), this);
    m_exportTrace->setToolTip(tr("The run as a trace for ui.perfetto.dev or chrome://tracing: pipeline spans per "
                                 "rank and stage, steps, checkpoints, flight-recorder waits and log lines"));
    m_exportSpec = new QPushButton(tr("Export spec…"), this);
    m_modelExport = new ModelExportAction(m_runs, m_watcher, this);
    m_delete = new QPushButton(tr("Delete…"), this);
    for (QPushButton* b : {m_open, m_resume, m_compare, m_exportMetrics, m_exportTrace, m_exportSpec, m_modelExport->button()})
        actions->addWidget(b);
    actions->addStretch(1);
    actions->addWidget(m_delete);
    return actions;
}

void RunsPage::connectActions() {
    connect(m_filterEdit, &QLineEdit::textChanged, m_filter, &RunFilterModel::setFilterText);
    connect(m_state, &QComboBox::currentIndexChanged, this, [this] {
        const QString state = m_state->currentData().toString();
        m_filter->setStates(state.isEmpty() ? QSet<QString>() : QSet<QString>{state});
    });
    connect(m_filter, &QAbstractItemModel::rowsInserted, this, &RunsPage::updateCount);
    connect(m_filter, &QAbstractItemModel::rowsRemoved, this, &RunsPage::updateCount);
    connect(m_filter, &QAbstractItemModel::modelReset, this, &RunsPage::updateCount);
    connect(m_filter, &QAbstractItemModel::layoutChanged, this, &RunsPage::updateCount);
    connect(m_filter, &QAbstractItemModel::dataChanged, this, &RunsPage::updateActions);
    connect(m_view->selectionModel(), &QItemSelectionModel::selectionChanged, this, &RunsPage::updateActions);
    connect(m_view, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
        if (!(index.flags() & Qt::ItemIsEditable)) openCurrent();
    });
    connect(m_view, &QTableView::customContextMenuRequested, this, &RunsPage::showContextMenu);
    connect(m_open, &QPushButton::clicked, this, &RunsPage::openCurrent);
    connect(m_resume, &QPushButton::clicked, this, &RunsPage::resumeCurrent);
    connect(m_compare, &QPushButton::clicked, this, &RunsPage::compareSelected);
    connect(m_exportMetrics, &QPushButton::clicked, this, &RunsPage::exportMetricsDialog);
    connect(m_exportTrace, &QPushButton::clicked, this, &RunsPage::exportTraceDialog);
    connect(m_exportSpec, &QPushButton::clicked, this, &RunsPage::exportSpecDialog);
    connect(m_delete, &QPushButton::clicked, this, &RunsPage::deleteCurrentDialog);
    connect(m_modelExport, &ModelExportAction::statusMessage, this, &RunsPage::statusMessage);
    // A run of the lineage clicked in the detail pane: selected, the filters cleared if they hide it.
    connect(m_detail, &RunDetailPane::runActivated, this, [this](qint64 id) {
        const int row = m_runs->rowOfRun(id);
        if (row >= 0 && !m_filter->mapFromSource(m_runs->index(row, 0)).isValid()) {
            setFilterText({});
            setStateFilter({});
        }
        selectRun(id);
    });
    connect(m_runs, &RunListModel::writeFailed, this,
            [this](const QString& message) { emit statusMessage(tr("Not saved: %1").arg(message)); });
    connect(m_launcher, &RunLauncher::started, this, [this](qint64 id) {
        emit statusMessage(tr("Resumed as run #%1").arg(id));
        if (m_watcher) m_watcher->pollNow();
        emit openRun(id);
    });
    connect(m_launcher, &RunLauncher::failed, this, [this](const QString& message) {
        emit statusMessage(message);
        QMessageBox::warning(this, tr("Resume"), message);
    });

    connect(m_deleter, &RunDeleter::deleted, this, [this](qint64 id) {
        emit statusMessage(tr("Deleted run #%1").arg(id));
        if (m_watcher) m_watcher->pollNow();
    });
    connect(m_deleter, &RunDeleter::failed, this,
            [this](qint64, const QString& message) { emit statusMessage(tr("Could not delete: %1").arg(message)); });
}

void RunsPage::setStorePath(const QString& path) {
    m_launcher->setStorePath(path);
    m_modelExport->setStorePath(path);
}

void RunsPage::setStateFilter(const QString& state) {
    const int index = m_state->findData(state);
    m_state->setCurrentIndex(index < 0 ? 0 : index);
}

void RunsPage::setFilterText(const QString& text) {
    m_filterEdit->setText(text);
}

void RunsPage::updateCount() {
    const int shown = m_filter->rowCount();
    const int total = m_runs->rowCount();
    m_count->setText(shown == total ? tr("%n run(s)", nullptr, total) : tr("%1 of %n run(s)", nullptr, total).arg(shown));
    updateActions();
}

qint64 RunsPage::currentRun() const {
    const QModelIndexList rows = m_view->selectionModel()->selectedRows();
    const QModelIndex current = m_view->currentIndex();
    if (current.isValid() && m_view->selectionModel()->isRowSelected(current.row(), {}))
        return current.data(RunListModel::RunIdRole).toLongLong();
    return rows.isEmpty() ? 0 : rows.first().data(RunListModel::RunIdRole).toLongLong();
}

QList<qint64> RunsPage::selectedRuns() const {
    QList<qint64> ids;
    for (const QModelIndex& index : m_view->selectionModel()->selectedRows())
        ids << index.data(RunListModel::RunIdRole).toLongLong();
    std::sort(ids.begin(), ids.end());
    return ids;
}

void RunsPage::selectRun(qint64 id) {
    const int row = m_runs->rowOfRun(id);
    if (row < 0) return;
    const QModelIndex index = m_filter->mapFromSource(m_runs->index(row, 0));
    if (!index.isValid()) return;
    m_view->selectionModel()->setCurrentIndex(index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    m_view->scrollTo(index);
}

void RunsPage::updateActions() {
    const qint64 id = currentRun();
    const std::optional<RunRecord> r = id ? m_runs->run(id) : std::nullopt;
    m_open->setEnabled(r.has_value());
    // A run another run already continues is not resumed again; the tooltip names the run to resume.
    const ResumeCheck resume = r ? ResumeCheck::of(*m_runs, id) : ResumeCheck();
    m_resume->setEnabled(resume.allowed && !m_launcher->isBusy());
    m_resume->setToolTip(resume.why.isEmpty() ? m_resumeTip : resume.why);
    m_compare->setEnabled(selectedRuns().size() >= 1);
    m_exportMetrics->setEnabled(r.has_value() && m_watcher);
    m_exportTrace->setEnabled(r.has_value() && m_watcher);
    m_exportSpec->setEnabled(r && !r->spec_toml.empty());
    m_delete->setEnabled(r && isTerminal(r->state) && m_writer);
    m_modelExport->setRun(r ? id : 0);
    m_detail->setRun(r ? id : 0);
}

void RunsPage::showContextMenu(const QPoint& pos) {
    if (!m_view->indexAt(pos).isValid()) return;
    QMenu menu(this);
    menu.setToolTipsVisible(true);
    QPushButton* exportModel = m_modelExport->button();
    for (QPushButton* b : {m_open, m_resume, m_compare, m_exportMetrics, m_exportTrace, m_exportSpec, exportModel, m_delete}) {
        QAction* a = menu.addAction(b->text(), b, &QPushButton::click);
        a->setEnabled(b->isEnabled());
        a->setToolTip(b->toolTip());
        if (b == exportModel) menu.addSeparator();
    }
    menu.addSeparator();
    menu.addActions(m_tableExport->actions());
    menu.exec(m_view->viewport()->mapToGlobal(pos));
}

void RunsPage::openCurrent() {
    if (const qint64 id = currentRun()) emit openRun(id);
}

void RunsPage::resumeCurrent() {
    const qint64 id = currentRun();
    if (!id || !ResumeCheck::of(*m_runs, id).allowed) return;
    m_launcher->resume(id);
    updateActions();
}

void RunsPage::compareSelected() {
    const QList<qint64> ids = selectedRuns();
    if (!ids.isEmpty()) emit compareRuns(ids);
}

void RunsPage::exportMetrics(qint64 id, const QString& path) {
    m_exporter->exportMetrics(id, path);
}

void RunsPage::exportTrace(qint64 id, const QString& path) {
    m_exporter->exportTrace(id, path);
}

bool RunsPage::exportSpec(qint64 id, const QString& path, QString* error) {
    const std::optional<RunRecord> r = m_runs->run(id);
    if (!r) {
        if (error) *error = tr("Run #%1 is not in the store").arg(id);
        return false;
    }
    return writeFileAtomically(path, QByteArray::fromStdString(r->spec_toml), error);
}

bool RunsPage::deleteRun(qint64 id, bool removeFolder, QString* error) {
    const std::optional<RunRecord> r = m_runs->run(id);
    if (!r) {
        if (error) *error = tr("Run #%1 is not in the store").arg(id);
        return false;
    }
    return m_deleter->deleteRun(*r, removeFolder, error);
}

void RunsPage::exportMetricsDialog() {
    const qint64 id = currentRun();
    const std::optional<RunRecord> r = id ? m_runs->run(id) : std::nullopt;
    if (!r) return;
    const QString suggested = QDir::home().filePath(QStringLiteral("%1-%2-metrics.csv").arg(id).arg(QString::fromStdString(r->name)));
    const QString path = FileDialogs::saveFile(this, tr("Export metrics"), suggested, tr("CSV (*.csv)"));
    if (!path.isEmpty()) exportMetrics(id, path);
}

void RunsPage::exportTraceDialog() {
    const qint64 id = currentRun();
    const std::optional<RunRecord> r = id ? m_runs->run(id) : std::nullopt;
    if (!r) return;
    const QString suggested = QDir::home().filePath(QStringLiteral("%1-%2-trace.json").arg(id).arg(QString::fromStdString(r->name)));
    const QString path = FileDialogs::saveFile(this, tr("Export trace"), suggested, tr("Trace (*.json)"));
    if (!path.isEmpty()) exportTrace(id, path);
}

void RunsPage::exportSpecDialog() {
    const qint64 id = currentRun();
    const std::optional<RunRecord> r = id ? m_runs->run(id) : std::nullopt;
    if (!r) return;
    const QString suggested = QDir::home().filePath(QStringLiteral("%1.toml").arg(QString::fromStdString(r->name)));
    const QString path = FileDialogs::saveFile(this, tr("Export spec"), suggested, tr("Run specs (*.toml)"));
    if (path.isEmpty()) return;
    QString error;
    if (exportSpec(id, path, &error)) emit statusMessage(tr("Wrote the spec of run #%1 to %2").arg(id).arg(path));
    else QMessageBox::warning(this, tr("Export spec"), error);
}

void RunsPage::deleteCurrentDialog() {
    const qint64 id = currentRun();
    const std::optional<RunRecord> r = id ? m_runs->run(id) : std::nullopt;
    if (!r) return;
    QMessageBox box(QMessageBox::Warning, tr("Delete run"),
                    tr("Delete run #%1 \"%2\" with its metrics, logs and spans? This cannot be undone.")
                        .arg(id)
                        .arg(QString::fromStdString(r->name)),
                    QMessageBox::Cancel, this);
    QPushButton* remove = box.addButton(tr("Delete"), QMessageBox::DestructiveRole);
    box.setDefaultButton(QMessageBox::Cancel);
    QCheckBox* folder = nullptr;
    if (!r->run_dir.empty()) {
        folder = new QCheckBox(tr("Also delete its folder %1 (checkpoints, output.log)").arg(QString::fromStdString(r->run_dir)));
        box.setCheckBox(folder);
    }
    box.exec();
    if (box.clickedButton() != remove) return;
    QString error;
    if (!deleteRun(id, folder && folder->isChecked(), &error)) QMessageBox::warning(this, tr("Delete run"), error);
}

void RunsPage::paintIcon(QPainter& p, const QColor&) {
    for (double y : {5.5, 12.0, 18.5}) {
        p.drawPoint(QPointF(4, y));
        p.drawLine(QPointF(8.5, y), QPointF(21, y));
    }
}

} // namespace parallax

#include "ui/pages/RunDetailPane.h"

#include "core/store/RunStore.h"
#include "ui/models/RunListModel.h"
#include "ui/models/StoreWatcher.h"
#include "ui/widgets/TableExport.h"

#include <QApplication>
#include <QClipboard>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QTableWidget>
#include <QVBoxLayout>

namespace parallax {

namespace {

QLabel* selectableLabel(QWidget* parent) {
    auto* label = new QLabel(parent);
    label->setTextFormat(Qt::PlainText);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
    label->setWordWrap(true);
    return label;
}

// What the checkpoints of a run depend on: a new step or the run's end may bring one, a moved
// folder changes their paths.
QString progressKey(const RunListModel& runs, qint64 id) {
    const std::optional<RunRecord> r = runs.run(id);
    if (!r) return {};
    return QStringLiteral("%1/%2/%3/%4/%5")
        .arg(id)
        .arg(r->last_step)
        .arg(QString::fromStdString(runStateName(r->state)))
        .arg(r->ended_at, 0, 'f', 3)
        .arg(QString::fromStdString(r->run_dir));
}

} // namespace

RunDetailPane::RunDetailPane(RunListModel* runs, StoreWatcher* watcher, QWidget* parent)
    : QWidget(parent), m_runs(runs), m_watcher(watcher) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_hint = new QLabel(RunDetail::hint(), this);
    m_hint->setAlignment(Qt::AlignCenter);
    m_hint->setWordWrap(true);
    m_hint->setEnabled(false);
    layout->addWidget(m_hint, 1);

    // The details scroll where the split leaves them little room.
    m_scroll = new QScrollArea(this);
    m_scroll->setWidgetResizable(true);
    m_scroll->setFrameShape(QFrame::NoFrame);
    m_body = new QWidget(m_scroll);
    auto* body = new QVBoxLayout(m_body);
    body->setContentsMargins(0, 0, 0, 0);
    m_title = new QLabel(m_body);
    QFont bold = m_title->font();
    bold.setBold(true);
    m_title->setFont(bold);
    m_title->setTextInteractionFlags(Qt::TextSelectableByMouse);
    body->addWidget(m_title);
    auto* columns = new QHBoxLayout;
    columns->addWidget(buildSummary(), 3);
    columns->addWidget(buildCheckpoints(), 2);
    body->addLayout(columns, 1);
    m_scroll->setWidget(m_body);
    layout->addWidget(m_scroll, 1);
    connect(m_copy, &QPushButton::clicked, this, &RunDetailPane::copyCommand);
    setRun(0);
}

QLabel* RunDetailPane::addRow(QFormLayout* form, const QString& label) {
    QLabel* value = selectableLabel(m_body);
    form->addRow(label, value);
    return value;
}

// The run's state, reason, times, folder, command, lineage, tags and notes, one row each.
QWidget* RunDetailPane::buildSummary() {
    auto* summary = new QWidget(m_body);
    auto* form = new QFormLayout(summary);
    m_form = form;
    form->setContentsMargins(0, 0, 0, 0);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    m_state = addRow(form, tr("State:"));
    m_reason = addRow(form, tr("Reason:"));
    m_started = addRow(form, tr("Started:"));
    m_ended = addRow(form, tr("Ended:"));
    m_duration = addRow(form, tr("Duration:"));
    m_runDir = addRow(form, tr("Folder:"));

    auto* command = new QHBoxLayout;
    m_command = selectableLabel(summary);
    m_command->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    command->addWidget(m_command, 1);
    m_copy = new QPushButton(tr("Copy"), summary);
    m_copy->setToolTip(tr("Put the launch command on the clipboard"));
    command->addWidget(m_copy, 0, Qt::AlignTop);
    form->addRow(tr("Launch command:"), command);

    m_lineage = new QHBoxLayout;
    m_noLineage = new QLabel(tr("—"), summary);
    m_lineage->addWidget(m_noLineage);
    m_lineage->addStretch(1);
    form->addRow(tr("Lineage:"), m_lineage);
    m_tags = addRow(form, tr("Tags:"));
    m_notes = addRow(form, tr("Notes:"));
    return summary;
}

// The run's checkpoints, newest first, with a line saying there are none (or why they are not shown).
QWidget* RunDetailPane::buildCheckpoints() {
    auto* box = new QWidget(m_body);
    auto* layout = new QVBoxLayout(box);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(new QLabel(tr("Checkpoints"), box));
    m_checkpoints = new QTableWidget(0, 5, box);
    m_checkpoints->setHorizontalHeaderLabels({tr("Step"), tr("When"), tr("Size"), tr("Layout"), tr("Path")});
    m_checkpoints->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_checkpoints->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_checkpoints->setWordWrap(false);
    m_checkpoints->verticalHeader()->hide();
    m_checkpoints->horizontalHeader()->setStretchLastSection(true);
    m_checkpoints->horizontalHeader()->setHighlightSections(false);
    TableExport::install(m_checkpoints, QStringLiteral("checkpoints"));
    layout->addWidget(m_checkpoints, 1);
    m_checkpointsStatus = new QLabel(box);
    m_checkpointsStatus->setWordWrap(true);
    layout->addWidget(m_checkpointsStatus);
    return box;
}

void RunDetailPane::setRun(qint64 id) {
    const qint64 shown = m_detail.run;
    m_detail = RunDetail::of(*m_runs, id);
    showTexts();
    if (!m_detail.run) {
        m_readKey.clear();
        showCheckpoints({});
        return;
    }
    if (m_detail.run != shown) {
        m_checkpoints->setRowCount(0);
        m_checkpointsStatus->setText(tr("Reading checkpoints…"));
        m_checkpointsStatus->show();
    }
    const QString key = progressKey(*m_runs, m_detail.run);
    if (key == m_readKey) return;
    m_readKey = key;
    readCheckpoints();
}

void RunDetailPane::showTexts() {
    const bool any = m_detail.run != 0;
    m_hint->setVisible(!any);
    m_scroll->setVisible(any);
    m_title->setText(m_detail.title);
    m_state->setText(m_detail.state);
    m_reason->setText(m_detail.reason);
    m_form->setRowVisible(m_reason, !m_detail.reason.isEmpty());
    m_started->setText(m_detail.started);
    m_ended->setText(m_detail.ended);
    m_duration->setText(m_detail.duration.isEmpty() ? tr("—") : m_detail.duration);
    m_runDir->setText(m_detail.runDir.isEmpty() ? tr("none yet") : m_detail.runDir);
    m_command->setText(m_detail.launchCommand.isEmpty() ? tr("not recorded") : m_detail.launchCommand);
    m_copy->setEnabled(!m_detail.launchCommand.isEmpty());
    m_tags->setText(m_detail.tags.isEmpty() ? tr("—") : m_detail.tags);
    m_notes->setText(m_detail.notes.isEmpty() ? tr("—") : m_detail.notes);
    showLineage();
}

// A button per run of the lineage, made again only when the lineage changed.
void RunDetailPane::showLineage() {
    if (!m_lineageButtons.isEmpty() && m_shownContinues == m_detail.continues &&
        m_shownContinuedBy == m_detail.continuedBy)
        return;
    // Later: the button clicked may be the one whose signal made the lineage change.
    for (QPushButton* old : m_lineageButtons) {
        old->hide();
        m_lineage->removeWidget(old);
        old->deleteLater();
    }
    m_lineageButtons.clear();
    m_shownContinues = m_detail.continues;
    m_shownContinuedBy = m_detail.continuedBy;
    const auto add = [this](const RunDetail::Link& link, const QString& text) {
        auto* button = new QPushButton(text, m_body);
        button->setFlat(true);
        button->setCursor(Qt::PointingHandCursor);
        button->setToolTip(tr("Select run #%1").arg(link.run));
        const qint64 id = link.run;
        connect(button, &QPushButton::clicked, this, [this, id] { emit runActivated(id); });
        m_lineage->insertWidget(m_lineage->count() - 1, button);
        m_lineageButtons << button;
    };
    if (m_detail.continues) add(*m_detail.continues, tr("continues %1").arg(m_detail.continues->text));
    for (const RunDetail::Link& link : m_detail.continuedBy) add(link, tr("continued by %1").arg(link.text));
    m_noLineage->setVisible(m_lineageButtons.isEmpty());
}

void RunDetailPane::copyCommand() {
    if (!m_detail.launchCommand.isEmpty()) QApplication::clipboard()->setText(m_detail.launchCommand);
}

void RunDetailPane::readCheckpoints() {
    if (!m_watcher || !m_detail.run) return;
    if (m_reading) {
        m_readAgain = true;
        return;
    }
    m_reading = true;
    const qint64 id = m_detail.run;
    const auto finished = [this] {
        m_reading = false;
        if (!m_readAgain) return;
        m_readAgain = false;
        readCheckpoints();
    };
    m_watcher->read<std::vector<CheckpointEvent>>(
        this, [id](const RunStore& store) { return store.checkpoints(id); },
        [this, id, finished](std::vector<CheckpointEvent> rows) {
            if (id == m_detail.run) {
                showCheckpoints(RunDetail::checkpointRows(std::move(rows)));
                emit checkpointsShown(id);
            }
            finished();
        },
        [this, id, finished](const QString& message) {
            if (id == m_detail.run) {
                m_checkpointsStatus->setText(tr("Could not read the checkpoints: %1").arg(message));
                m_checkpointsStatus->show();
            }
            finished();
        });
}

void RunDetailPane::showCheckpoints(const std::vector<RunDetail::Checkpoint>& rows) {
    m_checkpoints->setRowCount(int(rows.size()));
    for (int row = 0; row < int(rows.size()); ++row) {
        const RunDetail::Checkpoint& c = rows[size_t(row)];
        const QString cells[] = {QString::number(c.step), c.when, c.size, c.layout, c.path};
        for (int column = 0; column < 5; ++column) {
            auto* item = new QTableWidgetItem(cells[column]);
            if (column == 0 || column == 2) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            if (column == 4) item->setToolTip(c.path);
            m_checkpoints->setItem(row, column, item);
        }
    }
    m_checkpointsStatus->setText(RunDetail::noCheckpoints());
    m_checkpointsStatus->setVisible(rows.empty());
}

} // namespace parallax

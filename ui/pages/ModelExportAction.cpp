#include "ui/pages/ModelExportAction.h"

#include "core/store/RunStore.h"
#include "ui/models/RunListModel.h"
#include "ui/models/StoreWatcher.h"

#include <QDir>
#include <QLabel>
#include <QPushButton>

namespace parallax {

ModelExportAction::ModelExportAction(RunListModel* runs, StoreWatcher* watcher, QWidget* parent)
    : QObject(parent), m_runs(runs), m_watcher(watcher), m_parent(parent), m_runner(new ModelExportRunner(this)),
      m_button(new QPushButton(tr("Export…"), parent)), m_status(new QLabel(parent)) {
    m_tip = tr("Write the run's checkpoint as a Hugging Face folder (diffusers for qwen_image) that "
               "from_pretrained loads, LoRA merged, or a LoRA run's adapter alone (parallax-cli export)");
    m_button->setToolTip(m_tip);
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_status->hide();
    connect(m_button, &QPushButton::clicked, this, &ModelExportAction::trigger);
    connect(m_runner, &ProbeCommand::progress, this, [this](const QString& line) {
        showStatus(tr("Exporting run #%1: %2").arg(m_runner->runId()).arg(line));
    });
    connect(m_runner, &ModelExportRunner::finished, this, [this](qint64 id, const QString& folder, const QString& summary) {
        const QString text = summary.isEmpty() ? tr("Exported run #%1 to %2").arg(id).arg(folder)
                                               : tr("Exported run #%1: %2").arg(id).arg(summary);
        showStatus(text);
        emit statusMessage(text);
        update();
    });
    connect(m_runner, &ProbeCommand::failed, this, [this](const QString& message) {
        const QString text = tr("Export of run #%1 failed: %2").arg(m_runner->runId()).arg(message);
        showStatus(text, true);
        emit statusMessage(text);
        update();
    });
}

void ModelExportAction::setStorePath(const QString& path) {
    m_runner->setStorePath(path);
}

void ModelExportAction::setRun(qint64 id) {
    m_run = id;
    update();
}

std::optional<int64_t> ModelExportAction::knownCheckpoints(const RunRecord& r) const {
    const auto it = m_checkpoints.find(r.id);
    if (it == m_checkpoints.end() || it->second.lastStep != r.last_step || it->second.state != r.state) return std::nullopt;
    return it->second.count;
}

ModelExportCheck ModelExportAction::check() const {
    const std::optional<RunRecord> r = m_run ? m_runs->run(m_run) : std::nullopt;
    if (!r) return {};
    return ModelExportCheck::of(*r, m_runs->origin(m_runs->rowOfRun(m_run)), knownCheckpoints(*r));
}

// Checkpoints come with steps and at a run's end: the count is read again when either changed.
void ModelExportAction::readCheckpoints(const RunRecord& r) {
    if (m_reading || !m_watcher) return;
    m_reading = r.id;
    const qint64 id = r.id;
    const Checkpoints seen{r.last_step, r.state, 0};
    const auto done = [this, id, seen](int64_t count) {
        m_reading = 0;
        Checkpoints c = seen;
        c.count = count;
        m_checkpoints[id] = c;
        update();
    };
    m_watcher->read<int64_t>(
        this, [id](const RunStore& store) { return int64_t(store.checkpoints(id).size()); }, done,
        [this](const QString& message) {
            m_reading = 0;
            m_button->setToolTip(tr("The run's checkpoints could not be read: %1").arg(message));
        });
}

void ModelExportAction::update() {
    if (m_runner->isRunning()) {
        m_button->setEnabled(false);
        m_button->setToolTip(tr("Exporting run #%1 to %2…").arg(m_runner->runId()).arg(m_runner->folder()));
        return;
    }
    const std::optional<RunRecord> r = m_run ? m_runs->run(m_run) : std::nullopt;
    if (!r) {
        m_button->setEnabled(false);
        m_button->setToolTip(m_tip);
        return;
    }
    if (!m_watcher) {
        m_button->setEnabled(false);
        m_button->setToolTip(tr("No store is open"));
        return;
    }
    const ModelExportCheck c = check();
    // A run that could be exported but for its checkpoints not known yet: ask the store.
    const ModelExportCheck withOne = ModelExportCheck::of(*r, m_runs->origin(m_runs->rowOfRun(m_run)), 1);
    if (withOne.allowed && !knownCheckpoints(*r)) readCheckpoints(*r);
    m_button->setEnabled(c.allowed);
    m_button->setToolTip(c.allowed ? m_tip : c.why);
}

void ModelExportAction::trigger() {
    const ModelExportCheck c = check();
    const std::optional<RunRecord> r = m_run ? m_runs->run(m_run) : std::nullopt;
    if (!r || !c.allowed || m_runner->isRunning()) return;
    ModelExportRequest request;
    request.runId = r->id;
    request.runName = QString::fromStdString(r->name);
    request.lora = c.adapterOnly;
    request.suggestedFolder = QDir::home().filePath(QStringLiteral("%1-%2-export").arg(r->id).arg(request.runName));
    const std::optional<ModelExportChoice> choice =
        m_ask ? m_ask(request) : ModelExportDialog::ask(m_parent, request);
    if (!choice) return;
    QString error;
    if (!exportRun(r->id, *choice, &error)) {
        showStatus(error, true);
        emit statusMessage(error);
    }
}

bool ModelExportAction::exportRun(qint64 id, const ModelExportChoice& choice, QString* error) {
    const auto fail = [error](const QString& why) {
        if (error) *error = why;
        return false;
    };
    if (m_runner->isRunning())
        return fail(tr("Run #%1 is still being exported; wait for it").arg(m_runner->runId()));
    if (const QString problem = ModelExportRunner::folderProblem(choice.folder); !problem.isEmpty()) return fail(problem);
    showStatus(tr("Exporting run #%1 to %2…").arg(id).arg(choice.folder));
    m_runner->start(id, choice.folder, choice.content);
    update();
    return true;
}

void ModelExportAction::showStatus(const QString& text, bool failed) {
    m_status->setStyleSheet(failed ? QStringLiteral("color: #c62828;") : QString());
    m_status->setText(text);
    m_status->setToolTip(text);
    m_status->show();
}

} // namespace parallax

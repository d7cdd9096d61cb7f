#include "ui/pages/NewRunPage.h"

#include "core/launch/ShellQuote.h"
#include "core/store/StoreTypes.h"
#include "ui/models/RunLauncher.h"
#include "ui/models/RunListModel.h"
#include "ui/models/SpecDocument.h"
#include "ui/models/SpecFormModel.h"
#include "ui/models/SpecPresets.h"
#include "ui/pages/DatasetCacheRow.h"
#include "ui/pages/EstimatePanel.h"
#include "ui/pages/FinetuneRows.h"
#include "ui/pages/ProbeRow.h"
#include "ui/pages/ProbeRows.h"
#include "ui/pages/SpecForm.h"
#include "ui/pages/SpecIssuesPanel.h"
#include "ui/widgets/FileDialogs.h"

#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QFormLayout>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QPainter>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QToolButton>
#include <QVBoxLayout>

namespace parallax {

namespace {

const QColor kErrorColor(0xc6, 0x28, 0x28);

QString q(const std::string& s) {
    return QString::fromStdString(s);
}

} // namespace

NewRunPage::NewRunPage(QWidget* parent)
    : QWidget(parent), m_model(new SpecFormModel(this)), m_document(new SpecDocument(m_model, this)),
      m_launcher(new RunLauncher(this)), m_probes(new ProbeRows(m_document, this)),
      m_datasetCache(new DatasetCacheRow(m_document, this)), m_finetune(new FinetuneRows(m_model, this)) {
    std::vector<SpecForm::Placement> placements = m_probes->placements();
    for (const SpecForm::Placement& p : m_datasetCache->placements()) placements.push_back(p);
    for (const SpecForm::Placement& p : m_finetune->placements()) placements.push_back(p);
    m_form = new SpecForm(m_model, placements,
                          [this](const QString& title, const QString& what) { return confirmDiscard(title, what); });
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(buildTopBar());
    layout->addWidget(buildPanes(), 1);
    layout->addLayout(buildActions());
    fillPresetCombo();
    connectModel();
    connectLauncher();
    m_form->refresh();
    m_model->validateNow();
}

// ---- layout ---------------------------------------------------------------------------------

QLayout* NewRunPage::buildTopBar() {
    // Name, presets, files.
    auto* top = new QHBoxLayout;
    top->addLayout(m_form->nameFields(), 2);
    m_presets = new QComboBox(this);
    m_presets->setPlaceholderText(tr("Start from a preset…"));
    m_presets->setToolTip(tr("Example runs (resources/runs/*.toml)"));
    top->addWidget(m_presets, 1, Qt::AlignTop);
    auto* open = new QPushButton(tr("Open…"), this);
    auto* save = new QPushButton(tr("Save…"), this);
    top->addWidget(open, 0, Qt::AlignTop);
    top->addWidget(save, 0, Qt::AlignTop);
    connect(m_presets, &QComboBox::activated, this, [this](int index) {
        const QString name = m_presets->itemText(index);
        m_presets->setCurrentIndex(-1);
        loadPreset(name);
    });
    connect(open, &QPushButton::clicked, this, &NewRunPage::openSpecDialog);
    connect(save, &QPushButton::clicked, this, &NewRunPage::saveSpecDialog);
    return top;
}

QWidget* NewRunPage::buildPanes() {
    // The form beside the estimates and the issues.
    m_splitter = new QSplitter(Qt::Horizontal, this);
    m_scroll = new QScrollArea(m_splitter);
    m_scroll->setWidgetResizable(true);
    m_scroll->setFrameShape(QFrame::NoFrame);
    m_scroll->setWidget(m_form);
    m_form->followViewport(m_scroll->viewport());
    m_splitter->addWidget(m_scroll);

    auto* sideScroll = new QScrollArea(m_splitter);
    sideScroll->setWidgetResizable(true);
    sideScroll->setFrameShape(QFrame::NoFrame);
    auto* side = new QWidget(sideScroll);
    auto* sideLayout = new QVBoxLayout(side);
    sideLayout->setContentsMargins(0, 0, 0, 0);
    m_estimates = new EstimatePanel(m_model, side);
    sideLayout->addWidget(m_estimates);
    m_issues = new SpecIssuesPanel(side);
    sideLayout->addWidget(m_issues, 1);
    sideScroll->setWidget(side);
    m_splitter->addWidget(sideScroll);
    m_splitter->setStretchFactor(0, 3);
    m_splitter->setStretchFactor(1, 2);
    connect(m_issues, &SpecIssuesPanel::fieldActivated, this, [this](const QString& path) {
        if (QWidget* editor = fieldEditor(path)) {
            m_scroll->ensureWidgetVisible(editor);
            editor->setFocus();
        }
    });
    return m_splitter;
}

QLayout* NewRunPage::buildActions() {
    // Messages and the actions.
    auto* bottom = new QHBoxLayout;
    m_message = new QLabel(this);
    m_message->setWordWrap(true);
    m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
    bottom->addWidget(m_message, 1);
    m_copy = new QToolButton(this);
    m_copy->setPopupMode(QToolButton::MenuButtonPopup);
    auto* copyMenu = new QMenu(m_copy);
    QAction* copyLauncher = copyMenu->addAction(tr("Copy launch command (mpirun / srun)"));
    QAction* copyCli = copyMenu->addAction(tr("Copy parallax-cli command"));
    m_copy->setMenu(copyMenu);
    m_copy->setDefaultAction(copyLauncher);
    m_copy->setToolButtonStyle(Qt::ToolButtonTextOnly);
    bottom->addWidget(m_copy);
    m_launch = new QPushButton(tr("Launch"), this);
    m_launch->setDefault(true);
    m_launch->setMinimumWidth(120);
    QFont bold = m_launch->font();
    bold.setBold(true);
    m_launch->setFont(bold);
    bottom->addWidget(m_launch);
    connect(copyLauncher, &QAction::triggered, this, &NewRunPage::copyLaunchCommand);
    connect(copyCli, &QAction::triggered, this, &NewRunPage::copyCliCommand);
    connect(m_launch, &QPushButton::clicked, this, &NewRunPage::launch);
    return bottom;
}

void NewRunPage::connectModel() {
    connect(m_model, &SpecFormModel::specReset, m_form, &SpecForm::refresh);
    connect(m_model, &SpecFormModel::specEdited, this, [this] {
        m_form->refresh();
        // What was said about the spec as it was (loaded, saved, copied, a run started from it)
        // no longer describes the form.
        if (m_messageKind == MessageKind::Note || (m_messageKind == MessageKind::Launch && !m_launcher->isBusy()))
            clearMessage();
        showResumeDifferences();
        updateLaunchButton();
    });
    connect(m_model, &SpecFormModel::validated, this, [this] {
        showIssues();
        updateLaunchButton();
        if (m_messageKind == MessageKind::SpecErrors && !m_model->hasErrors()) clearMessage();
    });
    connect(m_document, &SpecDocument::sourcePathChanged, this, &NewRunPage::specFileChanged);
    connect(m_datasetCache, &DatasetCacheRow::issuesChanged, this, &NewRunPage::showIssues);
    connect(m_finetune, &FinetuneRows::issuesChanged, this, &NewRunPage::showIssues);
}

void NewRunPage::connectLauncher() {
    // parallax-cli has read the spec once it answers, whatever the answer.
    const auto forgetLaunchSpec = [this] {
        if (!m_launchSpec.isEmpty()) QFile::remove(m_launchSpec);
        m_launchSpec.clear();
    };
    connect(m_launcher, &RunLauncher::started, this, forgetLaunchSpec);
    connect(m_launcher, &RunLauncher::failed, this, forgetLaunchSpec);
    connect(m_launcher, &RunLauncher::started, this, [this](qint64 id) {
        const qint64 resumed = m_document->resumedRun(), edited = m_document->editedRun();
        showMessage(resumed > 0 ? tr("Run #%1 continues run #%2 from its checkpoint with the changed spec; its "
                                     "supervisor keeps it going when the console closes.").arg(id).arg(resumed)
                    : edited > 0 ? tr("Run #%1 started with the changed spec of run #%2; its supervisor keeps it "
                                      "going when the console closes.").arg(id).arg(edited)
                                 : tr("Run #%1 started; its supervisor keeps it going when the console closes.").arg(id),
                    false, MessageKind::Launch);
        m_messageRun = id;
        // The run keeps the spec it started with: the form's edits are not lost by replacing it.
        m_document->markLaunched();
        updateLaunchButton();
        emit runLaunched(id);
        followLaunchedRun();
    });
    connect(m_launcher, &RunLauncher::failed, this, [this](const QString& message) {
        showMessage(message, true);
        updateLaunchButton();
    });
}

// ---- the form -------------------------------------------------------------------------------

QWidget* NewRunPage::fieldEditor(const QString& path) const {
    return m_form->fieldEditor(path);
}

QLabel* NewRunPage::fieldLabel(const QString& path) const {
    return m_form->fieldLabel(path);
}

QLabel* NewRunPage::fieldIssueLabel(const QString& path) const {
    return m_form->fieldIssueLabel(path);
}

QString NewRunPage::microBatchesText() const {
    return m_form->microBatchesText();
}

FitRunner* NewRunPage::fitRunner() const { return m_probes->fitRunner(); }
QPushButton* NewRunPage::fitButton() const { return m_probes->fitRow()->button(); }
QPushButton* NewRunPage::fitUseButton() const { return m_probes->fitRow()->useButton(); }
QLabel* NewRunPage::fitStatusLabel() const { return m_probes->fitRow()->status(); }
BalanceRunner* NewRunPage::balanceRunner() const { return m_probes->balanceRunner(); }
QPushButton* NewRunPage::balanceButton() const { return m_probes->balanceRow()->button(); }
QPushButton* NewRunPage::balanceUseButton() const { return m_probes->balanceRow()->useButton(); }
QLabel* NewRunPage::balanceStatusLabel() const { return m_probes->balanceRow()->status(); }
AdviseRunner* NewRunPage::adviseRunner() const { return m_probes->adviseRunner(); }
LayoutAdviceModel* NewRunPage::adviceModel() const { return m_probes->adviceModel(); }
QPushButton* NewRunPage::adviceButton() const { return m_probes->adviceRow()->button(); }
QPushButton* NewRunPage::adviceUseButton() const { return m_probes->adviceRow()->useButton(); }
QLabel* NewRunPage::adviceStatusLabel() const { return m_probes->adviceRow()->status(); }

void NewRunPage::reloadClusterProfiles() {
    m_form->reloadClusterProfiles();
}

void NewRunPage::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    // A profile written since (on the Cluster page or in an editor) is offered at once.
    reloadClusterProfiles();
}

void NewRunPage::showIssues() {
    m_form->showIssues();
    std::vector<SpecIssue> rowIssues = m_datasetCache->issues();
    for (SpecIssue& issue : m_finetune->issues()) rowIssues.push_back(std::move(issue));
    m_issues->showIssues(*m_model, [this](const QString& path) { return fieldEditor(path) != nullptr; }, rowIssues);
}

void NewRunPage::updateLaunchButton() {
    const qint64 resumed = m_document->resumedRun();
    QString why;
    if (m_model->hasErrors()) why = tr("Fix the errors shown in red first");
    else if (m_document->storePath().isEmpty()) why = tr("Open a store first (File > Open store)");
    else if (m_launcher->isBusy()) why = tr("Starting…");
    else why = m_document->resumeBlocker();
    m_launch->setEnabled(why.isEmpty());
    m_launch->setToolTip(why.isEmpty() ? (resumed > 0 ? tr("Continue run #%1 from its last checkpoint with this "
                                                           "spec (parallax-cli run SPEC --from %1, detached)")
                                                            .arg(resumed)
                                                      : tr("Start the run with parallax-cli (detached)"))
                                       : why);
    m_launch->setText(m_launcher->isBusy() ? tr("Launching…")
                      : resumed > 0        ? tr("Resume #%1").arg(resumed)
                                           : tr("Launch"));
}

// ---- messages -------------------------------------------------------------------------------

void NewRunPage::showMessage(const QString& text, bool error, MessageKind kind) {
    m_message->setText(text);
    m_message->setStyleSheet(error ? QStringLiteral("color: %1;").arg(kErrorColor.name()) : QString());
    m_messageKind = text.isEmpty() ? MessageKind::None : kind;
    if (kind != MessageKind::Launch) m_messageRun = 0;
    emit statusMessage(text);
}

void NewRunPage::clearMessage() {
    if (m_message->text().isEmpty() && m_messageKind == MessageKind::None) return;
    showMessage(QString(), false, MessageKind::None);
}

void NewRunPage::setRunList(RunListModel* runs) {
    if (m_runs) disconnect(m_runs, nullptr, this, nullptr);
    m_runs = runs;
    if (!runs) return;
    connect(runs, &QAbstractItemModel::modelReset, this, &NewRunPage::followLaunchedRun);
    connect(runs, &QAbstractItemModel::rowsInserted, this, &NewRunPage::followLaunchedRun);
    connect(runs, &QAbstractItemModel::dataChanged, this, &NewRunPage::followLaunchedRun);
    followLaunchedRun();
}

void NewRunPage::followLaunchedRun() {
    if (m_messageKind != MessageKind::Launch || m_messageRun <= 0 || !m_runs) return;
    const std::optional<RunRecord> r = m_runs->run(m_messageRun);
    if (!r || r->state == RunState::Running || r->state == RunState::Queued) return;
    const QString steps = tr("%1 / %2 steps").arg(r->last_step < 0 ? 0 : stepsDoneAfter(r->last_step)).arg(r->steps_total);
    const QString who = r->name.empty() ? tr("Run #%1").arg(r->id) : tr("Run #%1 %2").arg(r->id).arg(q(r->name));
    QString text = r->state == RunState::Succeeded ? tr("%1 succeeded: %2.").arg(who, steps)
                                                   : tr("%1 %2 after %3").arg(who, q(runStateName(r->state)), steps);
    if (r->state != RunState::Succeeded) text += r->exit_reason.empty() ? QStringLiteral(".") : QStringLiteral(": ") + q(r->exit_reason);
    // A note now: the next edit of the form clears it.
    showMessage(text, r->state == RunState::Failed || r->state == RunState::Lost, MessageKind::Note);
}

void NewRunPage::showResumeDifferences() {
    if (m_document->resumedRun() <= 0) return;
    showMessage(m_document->resumeDifferences(), m_document->resumeRefused(), MessageKind::Context);
}

bool NewRunPage::confirmDiscard(const QString& title, const QString& what) {
    if (!m_model->isModified()) return true;
    const QString text = tr("%1 The form's changes since it was loaded are not saved and will be lost.").arg(what);
    if (m_confirmDiscard) return m_confirmDiscard(title, text);
    QMessageBox box(QMessageBox::Question, title, text, QMessageBox::Discard | QMessageBox::Cancel, this);
    box.setDefaultButton(QMessageBox::Cancel);
    return box.exec() == QMessageBox::Discard;
}

// ---- the spec document ----------------------------------------------------------------------

void NewRunPage::setStorePath(const QString& path) {
    m_document->setStorePath(path);
    m_launcher->setStorePath(path);
    updateLaunchButton();
}

QString NewRunPage::storePath() const { return m_document->storePath(); }
QString NewRunPage::sourcePath() const { return m_document->sourcePath(); }
qint64 NewRunPage::editedRun() const { return m_document->editedRun(); }
qint64 NewRunPage::resumedRun() const { return m_document->resumedRun(); }
QString NewRunPage::resumeDifferences() const { return m_document->resumeDifferences(); }

bool NewRunPage::editRunSpec(const RunSpec& spec, qint64 fromRun, const QString& why) {
    if (!confirmDiscard(tr("Fix and relaunch"), tr("The spec of run #%1 replaces the form.").arg(fromRun)))
        return false;
    // What was said about the spec before does not hold for this one.
    clearMessage();
    m_document->editRun(spec, fromRun);
    showMessage(tr("Editing the spec of run #%1. Change what made it fail, then Launch: it starts as a new run "
                   "(Resume on the Live page continues run #%1 unchanged from its last checkpoint).\nRun #%1 %2")
                    .arg(fromRun)
                    .arg(why),
                false, MessageKind::Context);
    return true;
}

bool NewRunPage::resumeRunSpec(const RunSpec& spec, qint64 fromRun) {
    if (!confirmDiscard(tr("Resume with changes"), tr("The spec of run #%1 replaces the form.").arg(fromRun)))
        return false;
    clearMessage();
    m_document->resumeRun(spec, fromRun);
    showResumeDifferences();
    updateLaunchButton();
    return true;
}

void NewRunPage::setSpec(const RunSpec& spec, const QString& sourcePath) {
    // What was said about the spec before does not hold for this one.
    clearMessage();
    m_document->setSpec(spec, sourcePath);
}

bool NewRunPage::loadSpecFile(const QString& path, QString* error) {
    const SpecDocument::Read read = SpecDocument::read(path);
    if (!read.spec) {
        if (error) *error = read.message;
        showMessage(read.message, true);
        return false;
    }
    setSpec(*read.spec, path);
    showMessage(read.message, false);
    return true;
}

bool NewRunPage::saveSpecFile(const QString& path, QString* error) {
    QString message;
    const bool saved = m_document->save(path, &message);
    if (!saved && error) *error = message;
    showMessage(message, !saved);
    return saved;
}

void NewRunPage::openSpecDialog() {
    const QString source = sourcePath();
    const QString start = source.isEmpty() ? SpecPresets::directories().value(0) : QFileInfo(source).absolutePath();
    const QString path = FileDialogs::openFile(this, tr("Open run spec"), start, tr("Run specs (*.toml);;All files (*)"));
    if (path.isEmpty()) return;
    if (!confirmDiscard(tr("Open run spec"), tr("Opening %1 replaces the form.").arg(QDir::toNativeSeparators(path))))
        return;
    QString error;
    if (!loadSpecFile(path, &error)) QMessageBox::warning(this, tr("Open run spec"), error);
}

void NewRunPage::saveSpecDialog() {
    const QString source = sourcePath();
    const QString start = source.isEmpty() ? QDir::home().filePath(q(m_model->spec().name) + QStringLiteral(".toml")) : source;
    const QString path = FileDialogs::saveFile(this, tr("Save run spec"), start, tr("Run specs (*.toml)"));
    if (path.isEmpty()) return;
    QString error;
    if (!saveSpecFile(path, &error)) QMessageBox::warning(this, tr("Save run spec"), error);
}

QStringList NewRunPage::presetDirectories() {
    return SpecPresets::directories();
}

QMap<QString, QString> NewRunPage::presetFiles() {
    return SpecPresets::files();
}

void NewRunPage::fillPresetCombo() {
    const QMap<QString, QString> presets = presetFiles();
    m_presets->clear();
    m_presets->addItems(SpecPresets::names(presets));
    m_presets->setCurrentIndex(-1);
    m_presets->setEnabled(!presets.isEmpty());
    if (presets.isEmpty()) m_presets->setPlaceholderText(tr("No presets found (resources/runs)"));
}

void NewRunPage::loadPreset(const QString& name) {
    const QMap<QString, QString> presets = presetFiles();
    const auto it = presets.find(name);
    if (it == presets.end()) {
        showMessage(tr("No preset named %1 in %2").arg(name, presetDirectories().join(QStringLiteral(", "))), true);
        return;
    }
    if (!confirmDiscard(tr("Start from a preset"), tr("The preset %1 replaces the form.").arg(name))) return;
    // A preset is a starting point: saving should not overwrite the example.
    if (loadSpecFile(it.value())) m_document->forgetSource();
}

// ---- launching ------------------------------------------------------------------------------

QString NewRunPage::writeLaunchSpec(QString* error) const {
    return m_document->writeLaunchSpec(error);
}

QString NewRunPage::launchCommandLine(const QString& specPath, QString* error) const {
    return m_document->launchCommandLine(specPath, error);
}

void NewRunPage::copyLaunchCommand() {
    QString error;
    const QString spec = writeLaunchSpec(&error);
    const QString line = spec.isEmpty() ? QString() : launchCommandLine(spec, &error);
    if (line.isEmpty()) {
        showMessage(error, true);
        return;
    }
    QApplication::clipboard()->setText(line);
    showMessage(tr("Copied (this runs the workers without a supervisor; the run will not appear in the store):\n%1").arg(line),
                false);
}

void NewRunPage::copyCliCommand() {
    QString error;
    const QString spec = writeLaunchSpec(&error);
    if (spec.isEmpty()) {
        showMessage(error, true);
        return;
    }
    QStringList words;
    for (const QString& w : QStringList{m_launcher->cliPath()} + m_launcher->launchArguments(spec)) {
        if (w == QLatin1String("--detach")) continue; // from a terminal the run is followed in place
        words << q(shellQuote(w.toStdString()));
    }
    const QString line = words.join(QChar(' '));
    QApplication::clipboard()->setText(line);
    showMessage(tr("Copied: %1").arg(line), false);
}

void NewRunPage::launch() {
    m_model->validateNow();
    if (m_model->hasErrors()) {
        showMessage(tr("The spec has errors (in red beside their fields); fix them to launch."), true,
                    MessageKind::SpecErrors);
        updateLaunchButton();
        return;
    }
    QString error;
    const QString spec = writeLaunchSpec(&error);
    if (spec.isEmpty()) {
        showMessage(error, true);
        return;
    }
    showMessage(tr("Starting %1…").arg(QDir::toNativeSeparators(spec)), false, MessageKind::Launch);
    m_launchSpec = spec;
    const qint64 resumed = m_document->resumedRun();
    if (resumed > 0)
        m_launcher->continueFrom(spec, resumed);
    else
        m_launcher->launch(spec);
    updateLaunchButton();
}

void NewRunPage::paintIcon(QPainter& p, const QColor& color) {
    p.drawEllipse(QRectF(2.5, 2.5, 19, 19));
    p.setBrush(color);
    p.drawPolygon(QPolygonF({QPointF(10, 7.5), QPointF(17, 12), QPointF(10, 16.5)}));
}

} // namespace parallax

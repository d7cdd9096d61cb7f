#include "ui/pages/NewRunPage.h"
#include "ui/widgets/FileDialogs.h"
#include "ui/widgets/WrappingLabel.h"

#include "core/launch/LaunchPlan.h"
#include "core/spec/Estimates.h"
#include "core/spec/LayoutLabel.h"
#include "core/spec/ModelDims.h"
#include "core/spec/SpecFields.h"
#include "core/spec/SpecOverrides.h"
#include "core/spec/SpecIO.h"
#include "core/store/StoreTypes.h"
#include "ui/models/BalanceRunner.h"
#include "ui/models/FitRunner.h"
#include "ui/models/LayoutAdvice.h"
#include "ui/models/RunLauncher.h"
#include "ui/models/RunListModel.h"
#include "ui/models/SpecFormModel.h"
#include "ui/pages/EstimatePanel.h"

#include <QPainter>
#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QLocale>
#include <QMenu>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QTableView>
#include <QHeaderView>
#include <QSplitter>
#include <QToolButton>
#include <QVBoxLayout>

#include <cstring>
#include <limits>
#include <stdexcept>
#include <variant>

namespace parallax {

namespace {

constexpr int kMaxInt = std::numeric_limits<int>::max();
const QColor kErrorColor(0xc6, 0x28, 0x28);
const QColor kWarningColor(0xb2, 0x6a, 0x00);
// Not a spec field: the memory of one GPU, which the estimates compare against.
const QString kDeviceMemoryKey = QStringLiteral("console.device_memory_gib");
// Not a spec field either: "Balance the stages by measured time", shown with a pipeline.
const QString kStageBalanceKey = QStringLiteral("console.stage_balance");

QString q(const std::string& s) {
    return QString::fromStdString(s);
}

QString shortest(double value) {
    return QString::number(value, 'g', QLocale::FloatingPointShortest);
}

QStringList splitHosts(const QString& text) {
    QStringList out;
    for (QString entry : text.split(QRegularExpression(QStringLiteral("[,\\s]+")), Qt::SkipEmptyParts))
        out << entry.trimmed();
    return out;
}

// The value of a model dimension once the preset is applied; nullopt when the model does not
// resolve (unknown kind or preset).
std::optional<int64_t> resolvedDimension(const RunSpec& spec, const QString& path) {
    ModelDims d;
    try {
        d = resolveModel(spec.model);
    } catch (const std::invalid_argument&) {
        return std::nullopt;
    }
    const std::string key = path.mid(path.indexOf(QChar('.')) + 1).toStdString();
    const std::pair<const char*, int64_t> dims[] = {
        {"layers", d.layers},         {"dim", d.dim},           {"heads", d.heads},
        {"ffn", d.ffn},               {"vocab", d.vocab},       {"seq_len", d.seq_len},
        {"image_size", d.image_size}, {"channels", d.channels}, {"patch", d.patch},
        {"vision_layers", d.vision_layers}, {"vision_dim", d.vision_dim}, {"vision_heads", d.vision_heads}};
    for (const auto& [name, value] : dims)
        if (key == name) return value;
    return std::nullopt;
}

const char* const kDimensionFields[] = {"model.layers",     "model.dim",           "model.heads",       "model.ffn",
                                        "model.vocab",      "model.seq_len",       "model.image_size",  "model.channels",
                                        "model.patch",      "model.vision_layers", "model.vision_dim",  "model.vision_heads"};

std::optional<int64_t>* dimensionSlot(ModelSpec& m, const QString& path) {
    const QString key = path.mid(path.indexOf(QChar('.')) + 1);
    const std::pair<const char*, std::optional<int64_t>*> table[] = {
        {"layers", &m.layers},         {"dim", &m.dim},           {"heads", &m.heads},
        {"ffn", &m.ffn},               {"vocab", &m.vocab},       {"seq_len", &m.seq_len},
        {"image_size", &m.image_size}, {"channels", &m.channels}, {"patch", &m.patch},
        {"vision_layers", &m.vision_layers}, {"vision_dim", &m.vision_dim}, {"vision_heads", &m.vision_heads}};
    for (const auto& [name, slot] : table)
        if (key == QLatin1String(name)) return slot;
    return nullptr;
}

void clearDimensions(ModelSpec& m) {
    for (const char* field : kDimensionFields)
        if (std::optional<int64_t>* slot = dimensionSlot(m, QLatin1String(field))) slot->reset();
}

// Whether the spec's model reads the dimension (gpt has no image side, only vlm a vision tower).
bool dimensionUsed(const RunSpec& spec, const QString& path) {
    const FieldInfo* info = specFieldInfo(path.toStdString());
    return info && fieldRelevant(*info, spec);
}

// The largest micro-batch up to `fits` that divides a replica's share of the global batch (1 when
// the share is not whole): the global batch stays, the rest becomes accumulation.
int64_t usableMicroBatch(const RunSpec& s, int64_t fits) {
    const int64_t dp = std::max<int64_t>(1, s.parallel.dp);
    const int64_t share = s.train.global_batch % dp == 0 ? s.train.global_batch / dp : 1;
    for (int64_t size = std::min(fits, share); size > 1; --size)
        if (share % size == 0) return size;
    return 1;
}

// What a split measured by the balance probe depends on: the model, the layout, the micro-batch and
// the devices (not the split itself, nor how it was chosen). An answer holds for the specs with its key.
std::string balanceKey(const RunSpec& s) {
    RunSpec k;
    k.model = s.model;
    k.parallel = s.parallel;
    k.parallel.stage_layers.clear();
    k.parallel.stage_split = StageSplit::Flops;
    k.train.micro_batch = s.train.micro_batch;
    k.launch.device = s.launch.device;
    k.launch.threads_per_rank = s.launch.threads_per_rank;
    return toToml(k);
}

QString splitText(const QVector<qint64>& layers) {
    QStringList parts;
    for (qint64 n : layers) parts << QString::number(n);
    return QStringLiteral("[") + parts.join(QStringLiteral(", ")) + QStringLiteral("]");
}

QString stageTimesText(const QVector<double>& ms) {
    QStringList parts;
    for (double v : ms) parts << QLocale().toString(v, 'f', 0);
    return parts.join(QStringLiteral(" / ")) + QStringLiteral(" ms");
}

// The field table's texts in the console's language.
QString fieldText(const char* text) {
    return QCoreApplication::translate("SpecField", text);
}

template <class... F>
struct Overloaded : F... {
    using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

} // namespace

NewRunPage::NewRunPage(QWidget* parent)
    : QWidget(parent), m_model(new SpecFormModel(this)), m_launcher(new RunLauncher(this)) {
    auto* layout = new QVBoxLayout(this);

    // Name, presets, files.
    auto* top = new QHBoxLayout;
    auto* nameForm = new QFormLayout;
    nameForm->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    {
        RunSpec probe;
        for (const SpecField& f : specFields(probe))
            if (f.section[0] == '\0' && f.info.offered()) addField(nameForm, f);
    }
    top->addLayout(nameForm, 2);
    m_presets = new QComboBox(this);
    m_presets->setPlaceholderText(tr("Start from a preset…"));
    m_presets->setToolTip(tr("Example runs (resources/runs/*.toml)"));
    top->addWidget(m_presets, 1, Qt::AlignTop);
    auto* open = new QPushButton(tr("Open…"), this);
    auto* save = new QPushButton(tr("Save…"), this);
    top->addWidget(open, 0, Qt::AlignTop);
    top->addWidget(save, 0, Qt::AlignTop);
    layout->addLayout(top);

    m_splitter = new QSplitter(Qt::Horizontal, this);
    m_scroll = new QScrollArea(m_splitter);
    m_scroll->setWidgetResizable(true);
    m_scroll->setFrameShape(QFrame::NoFrame);
    m_scroll->setWidget(buildForm());
    m_formViewport = m_scroll->viewport();
    m_formViewport->installEventFilter(this);
    m_splitter->addWidget(m_scroll);

    auto* sideScroll = new QScrollArea(m_splitter);
    sideScroll->setWidgetResizable(true);
    sideScroll->setFrameShape(QFrame::NoFrame);
    auto* side = new QWidget(sideScroll);
    auto* sideLayout = new QVBoxLayout(side);
    sideLayout->setContentsMargins(0, 0, 0, 0);
    m_estimates = new EstimatePanel(m_model, side);
    sideLayout->addWidget(m_estimates);
    auto* issues = new QGroupBox(tr("Issues"), side);
    auto* issuesLayout = new QVBoxLayout(issues);
    m_issueSummary = new QLabel(issues);
    m_issues = new QListWidget(issues);
    m_issues->setWordWrap(true);
    m_issues->setMinimumHeight(90);
    issuesLayout->addWidget(m_issueSummary);
    issuesLayout->addWidget(m_issues);
    sideLayout->addWidget(issues, 1);
    sideScroll->setWidget(side);
    m_splitter->addWidget(sideScroll);
    m_splitter->setStretchFactor(0, 3);
    m_splitter->setStretchFactor(1, 2);
    layout->addWidget(m_splitter, 1);

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
    layout->addLayout(bottom);

    fillPresetCombo();
    m_clusterProfiles = ClusterProfileListModel::scan();

    connect(m_presets, &QComboBox::activated, this, [this](int index) {
        const QString name = m_presets->itemText(index);
        m_presets->setCurrentIndex(-1);
        loadPreset(name);
    });
    connect(open, &QPushButton::clicked, this, &NewRunPage::openSpecDialog);
    connect(save, &QPushButton::clicked, this, &NewRunPage::saveSpecDialog);
    connect(copyLauncher, &QAction::triggered, this, &NewRunPage::copyLaunchCommand);
    connect(copyCli, &QAction::triggered, this, &NewRunPage::copyCliCommand);
    connect(m_launch, &QPushButton::clicked, this, &NewRunPage::launch);
    connect(m_issues, &QListWidget::itemActivated, this, [this](QListWidgetItem* item) {
        if (QWidget* editor = fieldEditor(item->data(Qt::UserRole).toString())) {
            m_scroll->ensureWidgetVisible(editor);
            editor->setFocus();
        }
    });
    connect(m_issues, &QListWidget::itemClicked, m_issues, &QListWidget::itemActivated);

    connect(m_model, &SpecFormModel::specReset, this, [this] {
        refreshFields();
        refreshVisibility();
        refreshDerived();
    });
    connect(m_model, &SpecFormModel::specEdited, this, [this] {
        refreshFields();
        refreshVisibility();
        refreshDerived();
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
    connect(m_launcher, &RunLauncher::started, this, [this](qint64 id) {
        showMessage(m_resumedRun > 0 ? tr("Run #%1 continues run #%2 from its checkpoint with the changed spec; its "
                                          "supervisor keeps it going when the console closes.").arg(id).arg(m_resumedRun)
                    : m_editedRun > 0 ? tr("Run #%1 started with the changed spec of run #%2; its supervisor keeps it "
                                           "going when the console closes.").arg(id).arg(m_editedRun)
                                      : tr("Run #%1 started; its supervisor keeps it going when the console closes.").arg(id),
                    false, MessageKind::Launch);
        m_messageRun = id;
        m_editedRun = 0;
        m_resumedRun = 0;
        // The run keeps the spec it started with: the form's edits are not lost by replacing it.
        m_model->markSaved();
        updateLaunchButton();
        emit runLaunched(id);
        followLaunchedRun();
    });
    connect(m_launcher, &RunLauncher::failed, this, [this](const QString& message) {
        showMessage(message, true);
        updateLaunchButton();
    });

    refreshFields();
    refreshVisibility();
    refreshDerived();
    m_model->validateNow();
}

// ---- form -----------------------------------------------------------------------------------

QWidget* NewRunPage::buildForm() {
    auto* form = new QWidget;
    auto* grid = new QGridLayout(form);
    grid->setContentsMargins(0, 0, 6, 0);
    auto* left = new QVBoxLayout;
    left->addWidget(buildSection("model", tr("Model")));
    left->addWidget(buildSection("data", tr("Data")));
    left->addWidget(buildSection("launch", tr("Target")));
    left->addStretch(1);
    auto* right = new QVBoxLayout;
    right->addWidget(buildSection("train", tr("Training")));
    right->addWidget(buildSection("parallel", tr("Parallel layout")));
    right->addWidget(buildSection("telemetry", tr("Telemetry")));
    right->addStretch(1);
    grid->addLayout(left, 0, 0);
    grid->addLayout(right, 0, 1);
    grid->setColumnStretch(0, 1);
    grid->setColumnStretch(1, 1);
    m_formGrid = grid;
    m_formColumns = {left, right};
    return form;
}

QWidget* NewRunPage::buildSection(const char* section, const QString& title) {
    auto* box = new QGroupBox(title);
    auto* form = new QFormLayout(box);
    // Every field the table offers, in file order; the rows only the console has go beside theirs.
    RunSpec probe;
    for (const SpecField& f : specFields(probe)) {
        if (std::strcmp(f.section, section) != 0 || !f.info.offered()) continue;
        addField(form, f);
        if (f.path() == "launch.device") addDeviceMemoryRow(form);
        if (f.path() == "train.micro_batch") addFitRow(form);
        if (f.path() == "parallel.stage_split") addBalanceRow(form);
    }
    if (std::strcmp(section, "parallel") == 0) {
        addDerivedRows(form);
        addAdviceRow(form);
    }
    return box;
}

void NewRunPage::addField(QFormLayout* form, const SpecField& f) {
    const QString path = q(f.path());
    const FieldInfo& info = f.info;
    const QString label = fieldText(info.label);
    // Fields whose editor does more than show the value: the model's presets, a data path with its
    // file dialog, the cluster profiles found on this machine.
    if (path == QLatin1String("model.preset")) return addModelPreset(form, label, path, info);
    if (path == QLatin1String("data.path")) return addDataPath(form, label, path, info);
    if (path == QLatin1String("launch.cluster")) return addClusterChoice(form, label, path, info);
    const auto options = [&info](bool integer) {
        QList<QPair<QVariant, QString>> items;
        for (const FieldOption& o : info.options)
            items.append({integer ? QVariant(QString::fromLatin1(o.value).toLongLong()) : QVariant(QString::fromUtf8(o.value)),
                          fieldText(o.label)});
        return items;
    };
    std::visit(Overloaded{
                   [&](std::string*) { addText(form, label, path, info); },
                   [&](ChoiceField* choice) {
                       QList<QPair<QVariant, QString>> items = options(false);
                       if (items.isEmpty())
                           for (const std::string& name : choice->names()) items.append({q(name), q(name)});
                       addChoice(form, label, path, items, fieldText(info.help));
                   },
                   [&](bool*) { addBool(form, label, path, info); },
                   [&](int64_t*) {
                       if (info.options.empty()) addInt(form, label, path, info);
                       else addChoice(form, label, path, options(true), fieldText(info.help));
                   },
                   [&](uint64_t*) { addNumber(form, label, path, info); },
                   [&](double*) { addNumber(form, label, path, info); },
                   [&](std::optional<int64_t>*) {
                       // A model dimension left unset takes the preset's value; another integer
                       // left unset is derived (launch.processes: dp × tp × pp).
                       if (std::strcmp(f.section, "model") == 0) addDimension(form, label, path, info);
                       else addOptionalInt(form, label, path, info);
                   },
                   [&](std::vector<std::string>*) { addLines(form, label, path, info); },
                   [&](auto*) {
                       throw std::logic_error("the New run form has no editor for the type of " + f.path() +
                                              "; offer it in specFields() only with one");
                   },
               },
               f.ref);
}

void NewRunPage::reflowForm() {
    // Side by side where both columns fit the visible width, else one below the other: a form cut
    // off at the right (a 1280-pixel window) hides fields a person does not know to scroll to.
    if (!m_formGrid || !m_formViewport) return;
    const int need = m_formColumns[0]->minimumSize().width() + m_formColumns[1]->minimumSize().width() +
                     m_formGrid->horizontalSpacing() + m_formGrid->contentsMargins().left() +
                     m_formGrid->contentsMargins().right();
    const bool sideBySide = m_formViewport->width() >= need;
    const bool now = m_formGrid->itemAtPosition(0, 1) != nullptr;
    if (sideBySide == now) return;
    m_formGrid->removeItem(m_formColumns[1]);
    // A layout taken out keeps its parent, and addLayout refuses a layout that has one.
    m_formColumns[1]->setParent(nullptr);
    if (sideBySide) {
        m_formGrid->addLayout(m_formColumns[1], 0, 1);
        m_formGrid->setColumnStretch(1, 1);
    } else {
        m_formGrid->addLayout(m_formColumns[1], 1, 0);
        m_formGrid->setColumnStretch(1, 0);
    }
}

bool NewRunPage::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_formViewport && event->type() == QEvent::Resize) reflowForm();
    return QWidget::eventFilter(watched, event);
}

QWidget* NewRunPage::wrap(const QString& path, QWidget* editor, const std::function<void()>& refresh) {
    auto* container = new QWidget;
    auto* v = new QVBoxLayout(container);
    v->setContentsMargins(0, 0, 0, 0);
    v->setSpacing(2);
    editor->setParent(container);
    v->addWidget(editor);
    auto* issue = new WrappingLabel(container);
    issue->setTextInteractionFlags(Qt::TextSelectableByMouse);
    issue->setObjectName(QStringLiteral("issue:") + path);
    issue->hide();
    v->addWidget(issue);
    editor->setObjectName(path);
    m_fields[path] = Field{editor, issue, container, refresh};
    return container;
}

void NewRunPage::addRow(QFormLayout* form, const QString& label, const QString& path, QWidget* editor,
                        const std::function<void()>& refresh, const QString& tip) {
    QWidget* container = wrap(path, editor, refresh);
    if (!tip.isEmpty()) editor->setToolTip(tip);
    form->addRow(label, container);
    m_rowForms[path] = form;
}

void NewRunPage::addInt(QFormLayout* form, const QString& label, const QString& path, const FieldInfo& info) {
    auto* spin = new QSpinBox;
    spin->setRange(int(std::clamp<int64_t>(info.minimum, std::numeric_limits<int>::min(), kMaxInt)),
                   int(std::clamp<int64_t>(info.maximum, std::numeric_limits<int>::min(), kMaxInt)));
    // Shown at the minimum: what it means there ("auto", "at the end only").
    if (info.unsetText[0] != '\0') spin->setSpecialValueText(fieldText(info.unsetText));
    spin->setKeyboardTracking(true);
    connect(spin, &QSpinBox::valueChanged, this, [this, path](int v) { m_model->setField(path, qlonglong(v)); });
    addRow(form, label, path, spin,
           [this, spin, path] {
               const QVariant v = m_model->field(path);
               const QSignalBlocker block(spin);
               // A value outside the usual range (from a file) is shown as it is; the validator says
               // what is wrong with it.
               const qlonglong n = v.isValid() ? v.toLongLong() : 0;
               const int shown = int(std::clamp<qlonglong>(n, std::numeric_limits<int>::min(), kMaxInt));
               if (shown < spin->minimum()) spin->setMinimum(shown);
               if (shown > spin->maximum()) spin->setMaximum(shown);
               spin->setValue(shown);
           },
           fieldText(info.help));
}

void NewRunPage::addOptionalInt(QFormLayout* form, const QString& label, const QString& path, const FieldInfo& info) {
    // Its minimum stands for no value: the text says what is used then ("dp × tp × pp").
    auto* spin = new QSpinBox;
    const int minimum = int(std::clamp<int64_t>(info.minimum, std::numeric_limits<int>::min(), kMaxInt));
    spin->setRange(minimum, int(std::clamp<int64_t>(info.maximum, minimum, kMaxInt)));
    spin->setSpecialValueText(fieldText(info.unsetText));
    connect(spin, &QSpinBox::valueChanged, this, [this, spin, path](int v) {
        m_model->setField(path, v == spin->minimum() ? QVariant() : QVariant(qlonglong(v)));
    });
    addRow(form, label, path, spin,
           [this, spin, path, minimum] {
               const QVariant v = m_model->field(path);
               const QSignalBlocker block(spin);
               const int n = v.isValid() ? int(std::clamp<qlonglong>(v.toLongLong(), std::numeric_limits<int>::min() + 1,
                                                                     kMaxInt))
                                         : minimum;
               // A value below the range (from a file) is shown as it is; the validator names it.
               if (v.isValid() && n <= spin->minimum()) spin->setMinimum(n - 1);
               spin->setValue(n);
           },
           fieldText(info.help));
}

void NewRunPage::addDimension(QFormLayout* form, const QString& label, const QString& path, const FieldInfo& info) {
    auto* spin = new QSpinBox;
    spin->setRange(int(std::clamp<int64_t>(info.minimum, 1, kMaxInt)), kMaxInt);
    const QString help = fieldText(info.help);
    connect(spin, &QSpinBox::valueChanged, this, [this, path](int v) { m_model->setField(path, qlonglong(v)); });
    addRow(form, label, path, spin,
           [this, spin, path, help] {
               const QVariant explicitValue = m_model->field(path);
               const std::optional<int64_t> resolved =
                   explicitValue.isValid() ? std::optional<int64_t>(explicitValue.toLongLong())
                                           : resolvedDimension(m_model->spec(), path);
               const QSignalBlocker block(spin);
               if (resolved) {
                   const int shown = int(std::clamp<int64_t>(*resolved, std::numeric_limits<int>::min(), kMaxInt));
                   if (shown < spin->minimum()) spin->setMinimum(shown);
                   spin->setValue(shown);
               }
               // Bold: set in this spec, not taken from the preset.
               QFont f = spin->font();
               f.setBold(explicitValue.isValid());
               spin->setFont(f);
               spin->setToolTip(help + QChar('\n') +
                                (explicitValue.isValid() ? tr("Set in this spec (overrides the preset)")
                                                         : tr("From the preset")));
           });
}

void NewRunPage::addChoice(QFormLayout* form, const QString& label, const QString& path,
                           const QList<QPair<QVariant, QString>>& items, const QString& tip) {
    auto* combo = new QComboBox;
    for (const auto& [value, text] : items) combo->addItem(text, value);
    const int known = combo->count();
    connect(combo, &QComboBox::activated, this, [this, combo, path](int index) {
        m_model->setField(path, combo->itemData(index));
    });
    addRow(form, label, path, combo,
           [this, combo, path, known] {
               const QString value = m_model->field(path).toString();
               const QSignalBlocker block(combo);
               while (combo->count() > known) combo->removeItem(combo->count() - 1);
               for (int i = 0; i < known; ++i) {
                   if (combo->itemData(i).toString() == value) {
                       combo->setCurrentIndex(i);
                       return;
                   }
               }
               // A value this form does not offer (from a file): shown, so the validator's message
               // beside it makes sense.
               combo->addItem(tr("%1 (unknown)").arg(value), value);
               combo->setCurrentIndex(combo->count() - 1);
           },
           tip);
}

void NewRunPage::addNumber(QFormLayout* form, const QString& label, const QString& path, const FieldInfo& info) {
    const QString example = QString::fromUtf8(info.example);
    auto* edit = new QLineEdit;
    edit->setPlaceholderText(example);
    const bool unsignedInteger = m_model->field(path).typeId() == QMetaType::ULongLong;
    auto parse = [unsignedInteger](const QString& text, bool* ok) -> QVariant {
        if (unsignedInteger) return QLocale::c().toULongLong(text.trimmed(), ok);
        return QLocale::c().toDouble(text.trimmed(), ok);
    };
    connect(edit, &QLineEdit::textEdited, this, [this, path, parse, example, unsignedInteger](const QString& text) {
        bool ok = false;
        const QVariant value = parse(text, &ok);
        if (!ok) {
            m_model->setInputError(path, unsignedInteger
                                             ? tr("%1: \"%2\" is not a whole number of 0 or more; write e.g. %3")
                                                   .arg(path, text, example)
                                             : tr("%1: \"%2\" is not a number; write e.g. %3").arg(path, text, example));
            return;
        }
        m_model->setInputError(path, {});
        m_model->setField(path, value);
    });
    addRow(form, label, path, edit,
           [this, edit, path, parse] {
               const QVariant value = m_model->field(path);
               bool ok = false;
               const QVariant shown = parse(edit->text(), &ok);
               // Keep what the person typed ("3e-4") while it means the stored value, and text that
               // does not parse yet while its error is shown.
               if (ok && shown == value) return;
               if (!ok && !m_model->inputError(path).isEmpty()) return;
               edit->setText(value.typeId() == QMetaType::Double ? shortest(value.toDouble()) : value.toString());
           },
           fieldText(info.help));
}

void NewRunPage::addBool(QFormLayout* form, const QString& label, const QString& path, const FieldInfo& info) {
    auto* box = new QCheckBox;
    connect(box, &QCheckBox::toggled, this, [this, path](bool on) { m_model->setField(path, on); });
    addRow(form, label, path, box,
           [this, box, path] {
               const QSignalBlocker block(box);
               box->setChecked(m_model->field(path).toBool());
           },
           fieldText(info.help));
}

void NewRunPage::addText(QFormLayout* form, const QString& label, const QString& path, const FieldInfo& info) {
    auto* edit = new QLineEdit;
    edit->setPlaceholderText(fieldText(info.example));
    connect(edit, &QLineEdit::textEdited, this, [this, path](const QString& text) { m_model->setField(path, text); });
    addRow(form, label, path, edit,
           [this, edit, path] {
               const QString value = m_model->field(path).toString();
               if (edit->text() != value) edit->setText(value);
           },
           fieldText(info.help));
}

void NewRunPage::addLines(QFormLayout* form, const QString& label, const QString& path, const FieldInfo& info) {
    // One entry per line (commas and spaces separate entries too).
    auto* lines = new QPlainTextEdit;
    lines->setPlaceholderText(fieldText(info.example));
    lines->setMaximumHeight(80);
    lines->setTabChangesFocus(true);
    connect(lines, &QPlainTextEdit::textChanged, this, [this, lines, path] {
        const QStringList entries = splitHosts(lines->toPlainText());
        if (entries != m_model->field(path).toStringList()) m_model->setField(path, entries);
    });
    addRow(form, label, path, lines,
           [this, lines, path] {
               const QStringList entries = m_model->field(path).toStringList();
               if (splitHosts(lines->toPlainText()) == entries) return;
               const QSignalBlocker block(lines);
               lines->setPlainText(entries.join(QChar('\n')));
           },
           fieldText(info.help));
}

void NewRunPage::addModelPreset(QFormLayout* form, const QString& label, const QString& path, const FieldInfo& info) {
    // Preset: the kind's presets and "custom"; choosing a preset drops the dimensions set by hand,
    // choosing custom keeps every dimension as it is shown.
    auto* presetRow = new QWidget;
    auto* presetLayout = new QHBoxLayout(presetRow);
    presetLayout->setContentsMargins(0, 0, 0, 0);
    m_modelPreset = new QComboBox(presetRow);
    m_resetDims = new QPushButton(tr("Reset to preset"), presetRow);
    m_resetDims->setToolTip(tr("Drop the dimensions set by hand (shown in bold)"));
    presetLayout->addWidget(m_modelPreset, 1);
    presetLayout->addWidget(m_resetDims);
    connect(m_modelPreset, &QComboBox::activated, this, [this](int index) {
        const QString preset = m_modelPreset->itemData(index).toString();
        if (preset != QLatin1String("custom")) {
            // A preset drops the dimensions set by hand; those changed since the spec was loaded
            // would be lost.
            ModelSpec now = m_model->spec().model;
            ModelSpec loaded = m_model->loadedSpec().model;
            QStringList changed;
            for (const char* field : kDimensionFields) {
                const std::optional<int64_t>* slot = dimensionSlot(now, QLatin1String(field));
                if (slot && slot->has_value() && *slot != *dimensionSlot(loaded, QLatin1String(field)))
                    changed << QLatin1String(field);
            }
            if (!changed.isEmpty() &&
                !confirmDiscard(tr("Model preset"),
                                tr("The preset %1 replaces the dimensions set by hand (%2).")
                                    .arg(preset, changed.join(QStringLiteral(", "))))) {
                m_fields[QStringLiteral("model.preset")].refresh(); // back to what the spec says
                return;
            }
        }
        m_model->edit(QStringLiteral("model.preset"), [preset](RunSpec& s) {
            if (preset == QLatin1String("custom")) {
                // Freeze what is shown: every dimension the kind uses becomes explicit (the others
                // would only draw warnings).
                const RunSpec resolved = s;
                for (const char* field : kDimensionFields) {
                    const QString path = QLatin1String(field);
                    const std::optional<int64_t> value = resolvedDimension(resolved, path);
                    std::optional<int64_t>* slot = dimensionSlot(s.model, path);
                    if (slot && value && dimensionUsed(resolved, path)) *slot = *value;
                }
            } else {
                clearDimensions(s.model);
            }
            s.model.preset = preset.toStdString();
        });
    });
    connect(m_resetDims, &QPushButton::clicked, this, [this] {
        m_model->edit(QStringLiteral("model.preset"), [](RunSpec& s) {
            clearDimensions(s.model);
            if (s.model.preset == "custom") s.model.preset = "tiny";
        });
    });
    addRow(form, label, path, presetRow, [this] {
        const RunSpec& s = m_model->spec();
        const QSignalBlocker block(m_modelPreset);
        m_modelPreset->clear();
        if (s.model.kind.known())
            for (const std::string& p : modelPresets(s.model.kind.value())) m_modelPreset->addItem(q(p), q(p));
        m_modelPreset->addItem(tr("custom"), QStringLiteral("custom"));
        int index = m_modelPreset->findData(q(s.model.preset));
        if (index < 0) {
            m_modelPreset->addItem(tr("%1 (unknown)").arg(q(s.model.preset)), q(s.model.preset));
            index = m_modelPreset->count() - 1;
        }
        m_modelPreset->setCurrentIndex(index);
        ModelSpec m = s.model;
        bool anyExplicit = false;
        for (const char* field : kDimensionFields)
            if (std::optional<int64_t>* slot = dimensionSlot(m, QLatin1String(field))) anyExplicit |= slot->has_value();
        m_resetDims->setEnabled(anyExplicit);
    }, fieldText(info.help));
}

void NewRunPage::addDataPath(QFormLayout* form, const QString& label, const QString& fieldPath, const FieldInfo& info) {
    auto* pathRow = new QWidget;
    auto* pathLayout = new QHBoxLayout(pathRow);
    pathLayout->setContentsMargins(0, 0, 0, 0);
    auto* path = new QLineEdit(pathRow);
    path->setObjectName(QStringLiteral("data.path.edit"));
    auto* browse = new QToolButton(pathRow);
    browse->setText(tr("Browse…"));
    pathLayout->addWidget(path, 1);
    pathLayout->addWidget(browse);
    connect(path, &QLineEdit::textEdited, this,
            [this, fieldPath](const QString& text) { m_model->setField(fieldPath, text); });
    connect(browse, &QToolButton::clicked, this, &NewRunPage::browseDataPath);
    addRow(form, label, fieldPath, pathRow, [this, path, browse] {
        const RunSpec& s = m_model->spec();
        const QString value = q(s.data.path);
        if (path->text() != value) path->setText(value);
        const QString fallback = q(defaultDataPath(s.data.kind));
        path->setPlaceholderText(s.data.kind == DataKind::Synthetic ? tr("not used by synthetic data")
                                 : fallback.isEmpty()       ? tr("required")
                                                            : tr("default: %1").arg(fallback));
        const bool used = s.data.kind != DataKind::Synthetic || !s.data.path.empty();
        path->setEnabled(used);
        browse->setEnabled(used);
    }, fieldText(info.help));
}

void NewRunPage::addClusterChoice(QFormLayout* form, const QString& label, const QString& path, const FieldInfo& info) {
    // Which hosts: a cluster profile (the Cluster page lists and checks them) or the list below.
    m_cluster = new QComboBox;
    connect(m_cluster, &QComboBox::activated, this, [this, path](int index) {
        const QString value = m_cluster->itemData(index).toString();
        m_model->edit(path, [value](RunSpec& s) {
            s.launch.cluster = value.toStdString();
            // The profile names the hosts; a list beside it would be a second answer.
            if (!value.isEmpty()) s.launch.hosts.clear();
        });
    });
    addRow(form, label, path, m_cluster, [this] { refreshClusterChoice(); }, fieldText(info.help));
}

void NewRunPage::addDeviceMemoryRow(QFormLayout* form) {
    // Not a spec field: the memory of one GPU, which the estimates compare against.
    auto* memory = new QDoubleSpinBox;
    memory->setRange(1, 4096);
    memory->setDecimals(0);
    memory->setSuffix(tr(" GiB"));
    memory->setValue(SpecFormModel::kDefaultCudaMemoryGiB);
    connect(memory, &QDoubleSpinBox::valueChanged, m_model, &SpecFormModel::setCudaMemoryGiB);
    addRow(form, tr("Device memory"), kDeviceMemoryKey, memory, [] {},
           tr("Memory of one GPU, for the estimates (an H200 has 141 GiB)"));
}

NewRunPage::ProbeRow NewRunPage::probeRow(const QString& action, const QString& tip) {
    ProbeRow r;
    r.widget = new QWidget;
    r.layout = new QVBoxLayout(r.widget);
    r.layout->setContentsMargins(0, 0, 0, 0);
    auto* buttons = new QHBoxLayout;
    r.button = new QPushButton(action, r.widget);
    r.button->setToolTip(tip);
    r.use = new QPushButton(r.widget);
    r.use->hide();
    buttons->addWidget(r.button);
    buttons->addWidget(r.use);
    buttons->addStretch(1);
    r.layout->addLayout(buttons);
    r.status = new QLabel(r.widget);
    r.status->setWordWrap(true);
    r.status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    r.status->hide();
    r.layout->addWidget(r.status);
    return r;
}

void NewRunPage::followProbe(ProbeCommand* command, const ProbeRow& row, const QString& action) {
    QPushButton* button = row.button;
    QLabel* status = row.status;
    connect(command, &ProbeCommand::progress, this, [status](const QString& line) {
        status->setText(line);
        status->show();
    });
    connect(command, &ProbeCommand::failed, this, [button, status, action](const QString& message) {
        button->setText(action);
        status->setText(message);
        status->show();
    });
}

void NewRunPage::showProbeStarted(const ProbeRow& row, const QString& stop, const QString& status) {
    row.use->hide();
    row.button->setText(stop);
    row.status->setText(status);
    row.status->show();
}

bool NewRunPage::stopProbe(ProbeCommand* command, QLabel* status) {
    if (!command->isRunning()) return false;
    command->stop();
    status->setText(tr("Stopping the probe under way…"));
    return true;
}

void NewRunPage::addFitRow(QFormLayout* form) {
    m_fitRow = probeRow(tr("Find the largest micro-batch"),
                        tr("Short probe runs of this spec on its target (parallax-cli fit): micro-batch 1, 2, 4, ... "
                           "then bisection, with and without activation checkpointing, each probe's peak memory "
                           "measured"));
    m_fitRow.status->setObjectName(QStringLiteral("fit.status"));
    form->addRow(QString(), m_fitRow.widget);

    m_fit = new FitRunner(this);
    connect(m_fitRow.button, &QPushButton::clicked, this, &NewRunPage::startOrStopFit);
    followProbe(m_fit, m_fitRow, tr("Find the largest micro-batch"));
    connect(m_fit, &FitRunner::finished, this, [this](const FitRunner::Result& r) {
        m_fitRow.button->setText(tr("Find the largest micro-batch"));
        m_fitAnswer = FitAnswer{};
        m_fitAnswer.known = true;
        m_fitAnswer.largest = r.largest;
        m_fitAnswer.largestWithCheckpointing = r.largestWithCheckpointing;
        if (const FitRunner::Probe* p = r.probe(false, r.largest)) m_fitAnswer.peak = p->peakBytes;
        if (const FitRunner::Probe* p = r.probe(true, r.largestWithCheckpointing))
            m_fitAnswer.peakWithCheckpointing = p->peakBytes;
        showFitResult();
    });
    connect(m_fitRow.use, &QPushButton::clicked, this, [this] {
        const bool checkpointing = m_model->spec().train.activation_checkpointing;
        const qint64 size = checkpointing ? m_fitAnswer.largestWithCheckpointing : m_fitAnswer.largest;
        if (size <= 0) return;
        m_model->edit(QStringLiteral("train.micro_batch"), [size](RunSpec& s) {
            // The global batch is the optimizer's and stays: the largest micro-batch up to the one
            // that fits that divides each replica's share, the rest as accumulation.
            s.train.micro_batch = usableMicroBatch(s, size);
        });
    });
    // The answer is about the spec it was found for; "Use" follows the form's checkpointing.
    connect(m_model, &SpecFormModel::specEdited, this, [this] { showFitResult(); });
}

void NewRunPage::startOrStopFit() {
    if (stopProbe(m_fit, m_fitRow.status)) return;
    const QString specPath = probeSpecFile(m_fitRow.status);
    if (specPath.isEmpty()) return;
    FitRunner::Options options;
    // Larger than a replica's share of the global batch is of no use without another global batch.
    const RunSpec& spec = m_model->spec();
    options.maxMicroBatch = std::max<int64_t>(1, spec.train.global_batch / std::max<int64_t>(1, spec.parallel.dp));
    // A GPU's memory is the one the estimates use; on a CPU fit divides this machine's among the ranks.
    if (m_model->spec().launch.device == Device::Cuda) options.memoryLimitBytes = m_model->cudaMemoryGiB() * 1073741824.0;
    m_fit->setStorePath(m_storePath);
    m_fitAnswer = FitAnswer{};
    showProbeStarted(m_fitRow, tr("Stop fit"), tr("Starting the probes…"));
    m_fit->start(specPath, options);
}

QString NewRunPage::probeSpecFile(QLabel* status) {
    QString error;
    const QString path = m_model->hasErrors() ? QString() : writeLaunchSpec(&error);
    if (path.isEmpty()) {
        status->setText(m_model->hasErrors() ? tr("Fix the spec's errors first: the probes run it as it is") : error);
        status->show();
    }
    return path;
}

void NewRunPage::addAdviceRow(QFormLayout* form) {
    m_adviceRow = probeRow(tr("Try the top 3 layouts"),
                           tr("Every dp × tp × pp × ZeRO of the spec's processes ranked by a step-time model "
                              "calibrated on them, and the three best of different shapes run side by side "
                              "(parallax-cli advise)"));
    m_adviceModel = new LayoutAdviceModel(this);
    auto* view = new QTableView(m_adviceRow.widget);
    view->setModel(m_adviceModel);
    view->verticalHeader()->hide();
    view->horizontalHeader()->setStretchLastSection(true);
    view->setSelectionBehavior(QAbstractItemView::SelectRows);
    view->setMinimumHeight(160);
    view->hide();
    m_adviceView = view;
    m_adviceRow.layout->addWidget(view);
    form->addRow(QString(), m_adviceRow.widget);

    m_advise = new AdviseRunner(this);
    connect(m_adviceRow.button, &QPushButton::clicked, this, &NewRunPage::startOrStopAdvice);
    followProbe(m_advise, m_adviceRow, tr("Try the top 3 layouts"));
    connect(m_advise, &AdviseRunner::finished, this, [this](const QVector<LayoutAdviceRow>& rows) {
        m_adviceRow.button->setText(tr("Try the top 3 layouts"));
        m_adviceModel->setRows(rows);
        m_adviceView->show();
        const std::optional<LayoutAdviceRow> best = m_adviceModel->best();
        m_adviceRow.status->setText(best ? tr("Fastest measured: %1 at %2 tokens/s")
                                               .arg(best->label, QLocale().toString(best->tokensPerS, 'f', 0))
                                         : tr("No layout could be measured; the table says why"));
        m_adviceRow.use->setText(best ? tr("Use %1").arg(best->label) : QString());
        m_adviceRow.use->setVisible(best && best->label != q(layoutLabel(m_model->spec().parallel)));
    });
    connect(m_adviceRow.use, &QPushButton::clicked, this, [this] {
        const std::optional<LayoutAdviceRow> best = m_adviceModel->best();
        if (!best) return;
        const QString label = best->label;
        m_model->edit(QStringLiteral("parallel.dp"), [label](RunSpec& s) {
            if (applyLayoutLabel(label, s)) s.train.micro_batch = usableMicroBatch(s, s.train.micro_batch);
        });
        m_adviceRow.use->hide();
    });
}

void NewRunPage::startOrStopAdvice() {
    if (stopProbe(m_advise, m_adviceRow.status)) return;
    const QString specPath = probeSpecFile(m_adviceRow.status);
    if (specPath.isEmpty()) return;
    const RunSpec& spec = m_model->spec();
    m_advise->setStorePath(m_storePath);
    showProbeStarted(m_adviceRow, tr("Stop"), tr("Calibrating on the spec's %1 processes…").arg(spec.processCount()));
    m_advise->start(specPath, spec.processCount(), 3,
                    spec.launch.device == Device::Cuda ? m_model->cudaMemoryGiB() * 1073741824.0 : 0.0);
}

void NewRunPage::addBalanceRow(QFormLayout* form) {
    m_balanceRow = probeRow(tr("Balance the stages by measured time"),
                            tr("A short probe run of this spec on its target (parallax-cli balance): every unit's "
                               "forward and backward timed on its stage, then the split of the blocks whose slowest "
                               "stage is fastest"));
    m_balanceRow.status->setObjectName(QStringLiteral("balance.status"));
    addRow(form, QString(), kStageBalanceKey, m_balanceRow.widget, [] {});

    m_balance = new BalanceRunner(this);
    connect(m_balanceRow.button, &QPushButton::clicked, this, &NewRunPage::startOrStopBalance);
    followProbe(m_balance, m_balanceRow, tr("Balance the stages by measured time"));
    connect(m_balance, &BalanceRunner::finished, this, [this](const BalanceRunner::Result& r) {
        m_balanceRow.button->setText(tr("Balance the stages by measured time"));
        m_balanceAnswer = BalanceAnswer{};
        m_balanceAnswer.known = true;
        m_balanceAnswer.key = m_balanceStartedKey;
        m_balanceAnswer.layersBefore = r.layersBefore();
        m_balanceAnswer.layers = r.layers();
        for (const BalanceRunner::Stage& stage : r.stages) {
            m_balanceAnswer.msBefore.push_back(stage.msBefore);
            m_balanceAnswer.ms.push_back(stage.ms);
        }
        showBalanceResult();
    });
    connect(m_balanceRow.use, &QPushButton::clicked, this, [this] {
        if (!m_balanceAnswer.known || m_balanceAnswer.key != balanceKey(m_model->spec())) return;
        const std::vector<int64_t> layers(m_balanceAnswer.layers.begin(), m_balanceAnswer.layers.end());
        m_model->edit(QStringLiteral("parallel.stage_layers"), [layers](RunSpec& s) {
            s.parallel.stage_layers = layers;
            s.parallel.stage_split = StageSplit::Profile;
        });
    });
    connect(m_model, &SpecFormModel::specEdited, this, [this] { showBalanceResult(); });
}

void NewRunPage::startOrStopBalance() {
    if (stopProbe(m_balance, m_balanceRow.status)) return;
    const QString specPath = probeSpecFile(m_balanceRow.status);
    if (specPath.isEmpty()) return;
    m_balanceStartedKey = balanceKey(m_model->spec());
    m_balance->setStorePath(m_storePath);
    m_balanceAnswer = BalanceAnswer{};
    showProbeStarted(m_balanceRow, tr("Stop balance"), tr("Starting the probe…"));
    m_balance->start(specPath);
}

void NewRunPage::showBalanceResult() {
    if (!m_balanceAnswer.known) return;
    const BalanceAnswer& a = m_balanceAnswer;
    const RunSpec& s = m_model->spec();
    if (a.key != balanceKey(s)) {
        // Measured for another model, layout or micro-batch: of no use to this one.
        m_balanceRow.status->setText(tr("The split measured before (%1) was for another model, layout or micro-batch; "
                                    "balance again").arg(splitText(a.layers)));
        m_balanceRow.use->hide();
        return;
    }
    double slowestBefore = 0, slowest = 0;
    for (double v : a.msBefore) slowestBefore = std::max(slowestBefore, v);
    for (double v : a.ms) slowest = std::max(slowest, v);
    const QVector<qint64> inForm(s.parallel.stage_layers.begin(), s.parallel.stage_layers.end());
    QString text = tr("Slowest stage %1 ms with %2 blocks, %3 ms balanced with %4 (forward + backward of one "
                      "micro-batch, measured)\nEach stage: %5 now, %6 balanced")
                       .arg(QLocale().toString(slowestBefore, 'f', 0), splitText(a.layersBefore),
                            QLocale().toString(slowest, 'f', 0), splitText(a.layers), stageTimesText(a.msBefore),
                            stageTimesText(a.ms));
    if (a.layers == a.layersBefore)
        text += QChar('\n') + tr("The spec's split is already the one whose slowest stage is fastest.");
    else if (inForm == a.layers)
        text += QChar('\n') + tr("The form splits the stages this way now (parallel.stage_layers).");
    m_balanceRow.status->setText(text);
    m_balanceRow.status->show();
    m_balanceRow.use->setText(tr("Use %1").arg(splitText(a.layers)));
    m_balanceRow.use->setVisible(inForm != a.layers && a.layers != a.layersBefore);
}

void NewRunPage::showFitResult() {
    if (!m_fitAnswer.known) return;
    const auto part = [](qint64 size, double peak) {
        return size > 0 ? tr("%1 (peak %2)").arg(size).arg(q(formatBytes(peak))) : tr("none fits");
    };
    m_fitRow.status->setText(tr("Largest micro-batch: %1 without activation checkpointing, %2 with it")
                             .arg(part(m_fitAnswer.largest, m_fitAnswer.peak),
                                  part(m_fitAnswer.largestWithCheckpointing, m_fitAnswer.peakWithCheckpointing)));
    m_fitRow.status->show();
    const RunSpec& s = m_model->spec();
    const qint64 fits = s.train.activation_checkpointing ? m_fitAnswer.largestWithCheckpointing : m_fitAnswer.largest;
    const int64_t size = fits > 0 ? usableMicroBatch(s, fits) : 0;
    m_fitRow.use->setText(tr("Use %1").arg(size));
    m_fitRow.use->setVisible(size > 0 && size != s.train.micro_batch);
}

void NewRunPage::addDerivedRows(QFormLayout* form) {
    m_microBatches = new QLabel;
    m_microBatches->setWordWrap(true);
    m_microBatches->setObjectName(QStringLiteral("derived.micro_batches"));
    form->addRow(tr("Micro-batches / step"), m_microBatches);
    m_world = new QLabel;
    m_world->setObjectName(QStringLiteral("derived.world"));
    form->addRow(tr("Processes"), m_world);
}

void NewRunPage::reloadClusterProfiles() {
    m_clusterProfiles = ClusterProfileListModel::scan();
    refreshClusterChoice();
}

void NewRunPage::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    // A profile written since (on the Cluster page or in an editor) is offered at once.
    reloadClusterProfiles();
}

void NewRunPage::refreshClusterChoice() {
    const QString value = q(m_model->spec().launch.cluster);
    const QSignalBlocker block(m_cluster);
    m_cluster->clear();
    m_cluster->addItem(tr("hosts listed in the spec"), QString());
    m_cluster->setItemData(0, tr("launch.hosts: one \"name:slots\" per line below"), Qt::ToolTipRole);
    for (const ClusterProfileListModel::Entry& e : m_clusterProfiles) {
        const QString text = e.profile ? (e.profile->hosts.size() == 1 ? tr("%1 (1 host)").arg(e.name())
                                                                : tr("%1 (%2 hosts)").arg(e.name()).arg(e.profile->hosts.size()))
                                       : tr("%1 (cannot be read)").arg(e.name());
        m_cluster->addItem(text, e.reference());
        m_cluster->setItemData(m_cluster->count() - 1, e.error.isEmpty() ? e.path : e.path + QChar('\n') + e.error,
                               Qt::ToolTipRole);
    }
    int index = m_cluster->findData(value);
    if (index < 0) {
        // A profile this console does not list (a path, or a name found nowhere): shown as it is, so
        // that the validator's or preflight's message about it makes sense.
        const bool file = value.contains(QChar('/')) && QFileInfo(value).isFile();
        m_cluster->addItem(file ? value : tr("%1 (no such profile)").arg(value), value);
        index = m_cluster->count() - 1;
    }
    m_cluster->setCurrentIndex(index);
}

void NewRunPage::browseDataPath() {
    const RunSpec& s = m_model->spec();
    const QString start = s.data.path.empty() ? q(defaultDataPath(s.data.kind)) : q(s.data.path);
    QString chosen;
    if (s.data.kind == DataKind::Text) {
        chosen = FileDialogs::openFile(this, tr("Text file"), start, tr("Text (*.txt);;All files (*)"));
        if (chosen.isEmpty()) chosen = QString();
    } else {
        chosen = FileDialogs::existingDirectory(this, tr("Data folder"), start);
    }
    if (!chosen.isEmpty()) m_model->setField(QStringLiteral("data.path"), chosen);
}

// ---- state ----------------------------------------------------------------------------------

void NewRunPage::setRowVisible(const QString& path, bool visible) {
    const auto field = m_fields.find(path);
    const auto formOf = m_rowForms.find(path);
    if (field == m_fields.end() || formOf == m_rowForms.end()) return;
    QFormLayout* form = formOf->second;
    QWidget* row = field->second.row;
    // A hidden row is taken out of its form and put back in its place when shown: Qt 6.4's
    // QFormLayout writes past its row arrays laying out hidden rows (setRowVisible, or widgets
    // hidden in place) beside word-wrapped labels.
    std::vector<QWidget*>& order = m_formRowOrder[form];
    if (order.empty()) {
        for (int r = 0; r < form->rowCount(); ++r) {
            QLayoutItem* item = form->itemAt(r, QFormLayout::FieldRole);
            if (!item) item = form->itemAt(r, QFormLayout::SpanningRole);
            order.push_back(item ? item->widget() : nullptr);
        }
    }
    int at = -1;
    QFormLayout::ItemRole role;
    form->getWidgetPosition(row, &at, &role);
    const bool present = at >= 0;
    if (visible == present) return;
    if (!visible) {
        const QFormLayout::TakeRowResult taken = form->takeRow(at);
        QWidget* label = taken.labelItem ? taken.labelItem->widget() : nullptr;
        delete taken.labelItem; // the items, not their widgets
        delete taken.fieldItem;
        if (label) label->hide();
        row->hide();
        m_takenLabels[row] = label;
        return;
    }
    // Back where it was: after the rows before it in the form's first order that are present.
    int index = 0;
    for (QWidget* w : order) {
        if (w == row) break;
        int r = -1;
        if (w) form->getWidgetPosition(w, &r, &role);
        if (r >= 0) ++index;
    }
    QWidget* label = m_takenLabels[row];
    m_takenLabels.erase(row);
    if (label) form->insertRow(index, label, row);
    else form->insertRow(index, row);
    if (label) label->show();
    row->show();
}

void NewRunPage::refreshFields() {
    // Every refresh leaves an editor alone when it already shows the value, so text being typed
    // (and text that does not parse yet) stays as it is.
    for (auto& [path, field] : m_fields)
        if (field.refresh) field.refresh();
}

void NewRunPage::refreshVisibility() {
    // A field that does not matter for this spec is hidden, unless it differs from the default:
    // then it stays, so that the validator's warning about it can be read beside it.
    RunSpec now = m_model->spec();
    RunSpec defaults;
    const std::vector<SpecField> fields = specFields(now), base = specFields(defaults);
    for (size_t i = 0; i < fields.size(); ++i) {
        const FieldInfo& info = fields[i].info;
        if (!info.offered() || !info.relevant) continue;
        setRowVisible(q(fields[i].path()),
                      info.relevant(now) || fieldValueText(fields[i].ref) != fieldValueText(base[i].ref));
    }
    setRowVisible(kDeviceMemoryKey, now.launch.device == Device::Cuda);
    setRowVisible(kStageBalanceKey, now.parallel.pp > 1);
}

QString NewRunPage::microBatchesText() const {
    return m_microBatches->text();
}

void NewRunPage::refreshDerived() {
    const RunSpec& s = m_model->spec();
    const int64_t per = s.parallel.dp * s.train.micro_batch;
    const int64_t m = s.accumulation();
    if (per <= 0) {
        m_microBatches->setText(tr("global batch / (dp × micro-batch): dp and micro-batch must be at least 1"));
    } else if (m > 0) {
        m_microBatches->setText(tr("%1 = global %2 / (dp %3 × micro %4)")
                                    .arg(m)
                                    .arg(s.train.global_batch)
                                    .arg(s.parallel.dp)
                                    .arg(s.train.micro_batch));
    } else {
        m_microBatches->setText(tr("global %1 / (dp %2 × micro %3) = %1 / %4 is not a whole number")
                                    .arg(s.train.global_batch)
                                    .arg(s.parallel.dp)
                                    .arg(s.train.micro_batch)
                                    .arg(per));
    }
    m_world->setText(tr("%1 = dp %2 × tp %3 × pp %4")
                         .arg(s.worldSize())
                         .arg(s.parallel.dp)
                         .arg(s.parallel.tp)
                         .arg(s.parallel.pp));
}

void NewRunPage::showIssues() {
    const std::vector<SpecIssue>& issues = m_model->issues();
    int errors = 0;
    int warnings = 0;
    for (auto& [path, field] : m_fields) {
        QStringList lines;
        bool error = false;
        for (const SpecIssue& issue : m_model->issuesFor(path)) {
            lines << q(issue.message);
            error |= !issue.warning;
        }
        // Issues of other fields this field's last change brought about: the person looks at the
        // field they changed, not at the one the validator names.
        for (const SpecIssue& issue : m_model->issuesCausedBy(path)) {
            const QString message = q(issue.message).contains(q(issue.field))
                                        ? q(issue.message)
                                        : q(issue.field) + QStringLiteral(": ") + q(issue.message);
            lines << (issue.warning ? tr("This value affects %1: %2") : tr("This value conflicts with %1: %2"))
                         .arg(q(issue.field), message);
            error |= !issue.warning;
        }
        field.issue->setWrappedText(lines.join(QChar('\n')));
        field.issue->setStyleSheet(QStringLiteral("color: %1;").arg((error ? kErrorColor : kWarningColor).name()));
        field.issue->setVisible(!lines.isEmpty());
        field.issue->setProperty("severity", lines.isEmpty() ? QString() : error ? QStringLiteral("error")
                                                                                 : QStringLiteral("warning"));
    }
    m_issues->clear();
    for (const bool warning : {false, true}) {
        for (size_t i = 0; i < issues.size(); ++i) {
            const SpecIssue& issue = issues[i];
            if (issue.warning != warning) continue;
            (warning ? warnings : errors) += 1;
            QString text = q(issue.message).contains(q(issue.field)) ? q(issue.message)
                                                                      : q(issue.field) + QStringLiteral(": ") + q(issue.message);
            const QString cause = m_model->causeOf(i);
            if (!cause.isEmpty()) text += tr(" (since %1 was changed)").arg(cause);
            auto* item = new QListWidgetItem(text, m_issues);
            item->setData(Qt::UserRole, q(issue.field));
            item->setForeground(warning ? kWarningColor : kErrorColor);
            item->setToolTip(fieldEditor(q(issue.field)) ? tr("Click to go to the field")
                                                         : tr("No field in the form: edit the spec file"));
        }
    }
    if (errors == 0 && warnings == 0) m_issueSummary->setText(tr("No issues: ready to launch."));
    else m_issueSummary->setText(tr("%1 error(s), %2 warning(s)").arg(errors).arg(warnings));
}

void NewRunPage::updateLaunchButton() {
    QString why;
    if (m_model->hasErrors()) why = tr("Fix the errors shown in red first");
    else if (m_storePath.isEmpty()) why = tr("Open a store first (File > Open store)");
    else if (m_launcher->isBusy()) why = tr("Starting…");
    m_launch->setEnabled(why.isEmpty());
    m_launch->setToolTip(why.isEmpty() ? tr("Start the run with parallax-cli (detached)") : why);
    if (m_resumedRun > 0 && why.isEmpty()) {
        for (const SpecIssue& issue : resumeIssues(m_resumedSpec, m_model->spec(), m_resumedRun))
            if (!issue.warning) why = tr("The checkpoint of run #%1 cannot be loaded into this spec: %2")
                                          .arg(m_resumedRun).arg(q(issue.message));
        m_launch->setEnabled(why.isEmpty());
    }
    m_launch->setToolTip(why.isEmpty() ? (m_resumedRun > 0 ? tr("Continue run #%1 from its last checkpoint with this "
                                                                "spec (parallax-cli run SPEC --from %1, detached)")
                                                                 .arg(m_resumedRun)
                                                           : tr("Start the run with parallax-cli (detached)"))
                                       : why);
    m_launch->setText(m_launcher->isBusy() ? tr("Launching…")
                      : m_resumedRun > 0   ? tr("Resume #%1").arg(m_resumedRun)
                                           : tr("Launch"));
}

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
                                                   : tr("%1 %2 after %3").arg(who, q(r->state), steps);
    if (r->state != RunState::Succeeded) text += r->exit_reason.empty() ? QStringLiteral(".") : QStringLiteral(": ") + q(r->exit_reason);
    // A note now: the next edit of the form clears it.
    showMessage(text, r->state == RunState::Failed || r->state == RunState::Lost, MessageKind::Note);
}

bool NewRunPage::confirmDiscard(const QString& title, const QString& what) {
    if (!m_model->isModified()) return true;
    const QString text = tr("%1 The form's changes since it was loaded are not saved and will be lost.").arg(what);
    if (m_confirmDiscard) return m_confirmDiscard(title, text);
    QMessageBox box(QMessageBox::Question, title, text, QMessageBox::Discard | QMessageBox::Cancel, this);
    box.setDefaultButton(QMessageBox::Cancel);
    return box.exec() == QMessageBox::Discard;
}

QWidget* NewRunPage::fieldEditor(const QString& path) const {
    const auto it = m_fields.find(path);
    return it == m_fields.end() ? nullptr : it->second.editor;
}

QLabel* NewRunPage::fieldLabel(const QString& path) const {
    const auto field = m_fields.find(path);
    const auto form = m_rowForms.find(path);
    if (field == m_fields.end() || form == m_rowForms.end()) return nullptr;
    const auto taken = m_takenLabels.find(field->second.row);
    QWidget* label = taken != m_takenLabels.end() ? taken->second : form->second->labelForField(field->second.row);
    return qobject_cast<QLabel*>(label);
}

QLabel* NewRunPage::fieldIssueLabel(const QString& path) const {
    const auto it = m_fields.find(path);
    return it == m_fields.end() ? nullptr : it->second.issue;
}

void NewRunPage::setStorePath(const QString& path) {
    m_storePath = path;
    m_launcher->setStorePath(path);
    updateLaunchButton();
}

// ---- files ----------------------------------------------------------------------------------

bool NewRunPage::editRunSpec(const RunSpec& spec, qint64 fromRun, const QString& why) {
    if (!confirmDiscard(tr("Fix and relaunch"), tr("The spec of run #%1 replaces the form.").arg(fromRun)))
        return false;
    setSpec(spec);
    m_editedRun = fromRun;
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
    setSpec(spec);
    m_resumedRun = fromRun;
    m_resumedSpec = spec;
    showResumeDifferences();
    updateLaunchButton();
    return true;
}

QString NewRunPage::resumeDifferences() const {
    if (m_resumedRun <= 0) return {};
    RunSpec was = m_resumedSpec, now = m_model->spec();
    QStringList changed;
    const std::vector<SpecField> before = specFields(was), after = specFields(now);
    for (size_t i = 0; i < before.size() && i < after.size(); ++i) {
        const std::string was = fieldValueText(before[i].ref), is = fieldValueText(after[i].ref);
        if (was != is)
            changed << tr("%1: %2 → %3").arg(q(before[i].path()), q(was), q(is));
    }
    QString text = changed.isEmpty()
                       ? tr("Resuming run #%1 from its last checkpoint with its own spec; change the layout, hosts or "
                            "devices, then Resume.").arg(m_resumedRun)
                       : tr("Resuming run #%1 from its last checkpoint with: %2").arg(m_resumedRun).arg(changed.join(QStringLiteral("; ")));
    for (const SpecIssue& issue : resumeIssues(m_resumedSpec, now, m_resumedRun))
        text += QLatin1Char('\n') + (issue.warning ? tr("Warning: ") : tr("Error: ")) + q(issue.message);
    return text;
}

void NewRunPage::showResumeDifferences() {
    if (m_resumedRun <= 0) return;
    bool refused = false;
    for (const SpecIssue& issue : resumeIssues(m_resumedSpec, m_model->spec(), m_resumedRun))
        refused = refused || !issue.warning;
    showMessage(resumeDifferences(), refused, MessageKind::Context);
}

void NewRunPage::setSpec(const RunSpec& spec, const QString& sourcePath) {
    m_editedRun = 0;
    m_resumedRun = 0;
    // What was said about the spec before does not hold for this one.
    clearMessage();
    m_sourcePath = sourcePath;
    m_model->setSpec(spec);
    emit specFileChanged(sourcePath);
}

bool NewRunPage::loadSpecFile(const QString& path, QString* error) {
    const SpecFormModel::SpecFile read = SpecFormModel::readFile(path);
    if (!read.spec) {
        if (error) *error = read.error;
        showMessage(read.error, true);
        return false;
    }
    const std::vector<SpecIssue>& unknown = read.unknown;
    setSpec(*read.spec, path);
    if (unknown.empty()) {
        showMessage(tr("Loaded %1").arg(QDir::toNativeSeparators(path)), false);
    } else {
        QStringList lines;
        for (const SpecIssue& issue : unknown) lines << q(issue.message);
        showMessage(tr("Loaded %1; kept %2 key(s) this version does not know:\n%3")
                        .arg(QDir::toNativeSeparators(path))
                        .arg(unknown.size())
                        .arg(lines.join(QChar('\n'))),
                    false);
    }
    return true;
}

bool NewRunPage::saveSpecFile(const QString& path, QString* error) {
    try {
        writeSpecFile(m_model->spec(), path.toStdString());
    } catch (const std::exception& e) {
        const QString message = tr("Could not save %1: %2").arg(path, q(e.what()));
        if (error) *error = message;
        showMessage(message, true);
        return false;
    }
    m_sourcePath = path;
    m_model->markSaved();
    emit specFileChanged(path);
    showMessage(tr("Saved %1").arg(QDir::toNativeSeparators(path)), false);
    return true;
}

void NewRunPage::openSpecDialog() {
    const QString start = m_sourcePath.isEmpty() ? presetDirectories().value(0) : QFileInfo(m_sourcePath).absolutePath();
    const QString path = FileDialogs::openFile(this, tr("Open run spec"), start, tr("Run specs (*.toml);;All files (*)"));
    if (path.isEmpty()) return;
    if (!confirmDiscard(tr("Open run spec"), tr("Opening %1 replaces the form.").arg(QDir::toNativeSeparators(path))))
        return;
    QString error;
    if (!loadSpecFile(path, &error)) QMessageBox::warning(this, tr("Open run spec"), error);
}

void NewRunPage::saveSpecDialog() {
    const QString start = m_sourcePath.isEmpty() ? QDir::home().filePath(q(m_model->spec().name) + QStringLiteral(".toml"))
                                                 : m_sourcePath;
    const QString path = FileDialogs::saveFile(this, tr("Save run spec"), start, tr("Run specs (*.toml)"));
    if (path.isEmpty()) return;
    QString error;
    if (!saveSpecFile(path, &error)) QMessageBox::warning(this, tr("Save run spec"), error);
}

QStringList NewRunPage::presetDirectories() {
    QStringList out;
    const QDir app(QCoreApplication::applicationDirPath());
    // The source tree above a build folder (build/<preset>/app/parallax), then installed copies.
    QStringList candidates = {app.filePath(QStringLiteral("../../resources/runs"))};
    QDir up = app;
    for (int level = 0; level < 6 && up.cdUp(); ++level) candidates << up.filePath(QStringLiteral("resources/runs"));
    candidates << app.filePath(QStringLiteral("../share/parallax/runs"));
    for (const QString& c : candidates) {
        const QString clean = QDir::cleanPath(c);
        if (QFileInfo(clean).isDir() && !out.contains(clean)) out << clean;
    }
    out << QStringLiteral(":/runs");
    return out;
}

QMap<QString, QString> NewRunPage::presetFiles() {
    QMap<QString, QString> out;
    for (const QString& dir : presetDirectories()) {
        const QFileInfoList files = QDir(dir).entryInfoList({QStringLiteral("*.toml")}, QDir::Files, QDir::Name);
        if (files.isEmpty()) continue;
        for (const QFileInfo& f : files) out.insert(f.completeBaseName(), f.absoluteFilePath());
        break;
    }
    return out;
}

void NewRunPage::fillPresetCombo() {
    const QMap<QString, QString> presets = presetFiles();
    m_presets->clear();
    // The quick start first: it is the one to try first.
    if (presets.contains(QStringLiteral("quickstart"))) m_presets->addItem(QStringLiteral("quickstart"));
    for (auto it = presets.begin(); it != presets.end(); ++it)
        if (it.key() != QLatin1String("quickstart")) m_presets->addItem(it.key());
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
    if (loadSpecFile(it.value())) m_sourcePath.clear();
}

// ---- launching ------------------------------------------------------------------------------

QString NewRunPage::writeLaunchSpec(QString* error) const {
    if (m_storePath.isEmpty()) {
        if (error) *error = tr("No store is open; open one with File > Open store");
        return {};
    }
    const QDir dir(QFileInfo(m_storePath).absoluteDir().filePath(QStringLiteral("specs")));
    if (!dir.exists() && !QDir().mkpath(dir.path())) {
        if (error) *error = tr("Could not create %1 for the run's spec; check the store folder's permissions").arg(dir.path());
        return {};
    }
    const QString stamp = QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss-zzz"));
    QString name = q(m_model->spec().name);
    if (name.isEmpty()) name = QStringLiteral("run");
    const QString path = dir.filePath(name + QChar('-') + stamp + QStringLiteral(".toml"));
    try {
        writeSpecFile(m_model->spec(), path.toStdString());
    } catch (const std::exception& e) {
        if (error) *error = tr("Could not write the spec to %1: %2").arg(path, q(e.what()));
        return {};
    }
    return path;
}

QString NewRunPage::launchCommandLine(const QString& specPath, QString* error) const {
    LaunchContext context;
    const QDir app(QCoreApplication::applicationDirPath());
    context.worker = app.filePath(QStringLiteral("parallax-worker")).toStdString();
    context.spec_path = specPath.toStdString();
    // Outside a supervisor the run has no id: its folder is named after the spec file.
    context.run_dir = QFileInfo(m_storePath)
                          .absoluteDir()
                          .filePath(QStringLiteral("runs/") + QFileInfo(specPath).completeBaseName())
                          .toStdString();
    try {
        return q(makeLaunchPlan(m_model->spec(), context).commandLine());
    } catch (const std::exception& e) {
        if (error) *error = q(e.what());
        return {};
    }
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
    if (m_resumedRun > 0)
        m_launcher->continueFrom(spec, m_resumedRun);
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

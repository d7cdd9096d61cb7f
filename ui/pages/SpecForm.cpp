#include "ui/pages/SpecForm.h"

#include "ui/models/SpecFormModel.h"
#include "ui/pages/SpecCustomEditors.h"
#include "ui/pages/SpecFieldEditors.h"
#include "ui/widgets/WrappingLabel.h"

#include <QEvent>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QLabel>
#include <QVBoxLayout>

#include <cstring>

namespace parallax {

namespace {

const QColor kErrorColor(0xc6, 0x28, 0x28);
const QColor kWarningColor(0xb2, 0x6a, 0x00);
// Not a spec field: the memory of one GPU, which the estimates compare against.
const QString kDeviceMemoryKey = QStringLiteral("console.device_memory_gib");

QString q(const std::string& s) {
    return QString::fromStdString(s);
}

// The lines shown beneath a field: its own issues, then those of other fields its last change
// brought about (the person looks at the field they changed, not at the one the validator names).
QStringList issueLines(const SpecFormModel& model, const QString& path, bool* error) {
    QStringList lines;
    for (const SpecIssue& issue : model.issuesFor(path)) {
        lines << q(issue.message);
        *error |= !issue.warning;
    }
    for (const SpecIssue& issue : model.issuesCausedBy(path)) {
        const QString message = q(issue.message).contains(q(issue.field)) ? q(issue.message)
                                                                           : q(issue.field) + QStringLiteral(": ") + q(issue.message);
        lines << (issue.warning ? SpecForm::tr("This value affects %1: %2") : SpecForm::tr("This value conflicts with %1: %2"))
                     .arg(q(issue.field), message);
        *error |= !issue.warning;
    }
    return lines;
}

} // namespace

SpecForm::SpecForm(SpecFormModel* model, const std::vector<Placement>& placements, ConfirmDiscard confirm,
                   QWidget* parent)
    : QWidget(parent), m_model(model), m_confirm(std::move(confirm)),
      m_clusterProfiles(std::make_shared<std::vector<ClusterProfileListModel::Entry>>(ClusterProfileListModel::scan())) {
    m_nameForm = new QFormLayout;
    m_nameForm->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    {
        RunSpec probe;
        for (const SpecField& f : specFields(probe))
            if (f.section[0] == '\0' && f.info.offered()) addField(m_nameForm, f);
    }
    for (const Placement& p : placements)
        if (!p.key.isEmpty() && p.shownWhen) m_shownWhen[p.key] = p.shownWhen;

    auto* grid = new QGridLayout(this);
    grid->setContentsMargins(0, 0, 6, 0);
    auto* left = new QVBoxLayout;
    left->addWidget(buildSection("model", tr("Model"), placements));
    left->addWidget(buildSection("finetune", tr("Fine-tuning"), placements));
    left->addWidget(buildSection("data", tr("Data"), placements));
    left->addWidget(buildSection("launch", tr("Target"), placements));
    left->addStretch(1);
    auto* right = new QVBoxLayout;
    right->addWidget(buildSection("train", tr("Training"), placements));
    right->addWidget(buildSection("samples", tr("Samples"), placements));
    right->addWidget(buildSection("parallel", tr("Parallel layout"), placements));
    right->addWidget(buildSection("telemetry", tr("Telemetry"), placements));
    right->addStretch(1);
    grid->addLayout(left, 0, 0);
    grid->addLayout(right, 0, 1);
    grid->setColumnStretch(0, 1);
    grid->setColumnStretch(1, 1);
    m_grid = grid;
    m_columns = {left, right};
}

QWidget* SpecForm::buildSection(const char* section, const QString& title, const std::vector<Placement>& placements) {
    auto* box = new QGroupBox(title);
    auto* form = new QFormLayout(box);
    // Every field the table offers, in file order; the rows only the console has go beside theirs.
    RunSpec probe;
    for (const SpecField& f : specFields(probe)) {
        if (std::strcmp(f.section, section) != 0 || !f.info.offered()) continue;
        addField(form, f);
        if (f.path() == "launch.device")
            addRow(form, tr("Device memory"), kDeviceMemoryKey, SpecCustomEditors::deviceMemory(m_model));
        place(form, q(f.path()), placements);
    }
    if (std::strcmp(section, "parallel") == 0) addDerivedRows(form);
    place(form, QLatin1String(section), placements);
    m_sections.emplace_back(box, form);
    return box;
}

void SpecForm::place(QFormLayout* form, const QString& after, const std::vector<Placement>& placements) {
    for (const Placement& p : placements) {
        if (p.after != after) continue;
        if (p.key.isEmpty()) form->addRow(QString(), p.widget);
        else addRow(form, QString(), p.key, FieldEditor{p.widget, [] {}, {}});
    }
}

void SpecForm::addField(QFormLayout* form, const SpecField& f) {
    const QString path = q(f.path());
    const QString label = SpecFieldEditors::fieldText(f.info.label);
    // Fields whose editor does more than show the value: the model's presets, a data path with its
    // file dialog, the cluster profiles found on this machine.
    if (path == QLatin1String("model.preset"))
        return addRow(form, label, path, SpecCustomEditors::modelPreset(m_model, f.info, m_confirm));
    if (path == QLatin1String("data.path"))
        return addRow(form, label, path, SpecCustomEditors::dataPath(m_model, path, f.info));
    if (path == QLatin1String("model.from"))
        return addRow(form, label, path, SpecCustomEditors::modelFolder(m_model, path, f.info));
    if (path == QLatin1String("launch.cluster"))
        return addRow(form, label, path, SpecCustomEditors::clusterChoice(m_model, path, f.info, m_clusterProfiles));
    addRow(form, label, path, SpecFieldEditors::forField(m_model, f));
}

QWidget* SpecForm::wrap(const QString& path, QWidget* editor, const std::function<void()>& refresh) {
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

void SpecForm::addRow(QFormLayout* form, const QString& label, const QString& path, const FieldEditor& editor) {
    QWidget* container = wrap(path, editor.widget, editor.refresh);
    if (!editor.tip.isEmpty()) editor.widget->setToolTip(editor.tip);
    form->addRow(label, container);
    m_rowForms[path] = form;
}

void SpecForm::addDerivedRows(QFormLayout* form) {
    m_microBatches = new QLabel;
    m_microBatches->setWordWrap(true);
    m_microBatches->setObjectName(QStringLiteral("derived.micro_batches"));
    form->addRow(tr("Micro-batches / step"), m_microBatches);
    m_world = new QLabel;
    m_world->setObjectName(QStringLiteral("derived.world"));
    form->addRow(tr("Processes"), m_world);
}

void SpecForm::followViewport(QWidget* viewport) {
    m_viewport = viewport;
    viewport->installEventFilter(this);
}

void SpecForm::reflow() {
    // Side by side where both columns fit the visible width, else one below the other: a form cut
    // off at the right (a 1280-pixel window) hides fields a person does not know to scroll to.
    if (!m_grid || !m_viewport) return;
    const int need = m_columns[0]->minimumSize().width() + m_columns[1]->minimumSize().width() +
                     m_grid->horizontalSpacing() + m_grid->contentsMargins().left() + m_grid->contentsMargins().right();
    const bool sideBySide = m_viewport->width() >= need;
    const bool now = m_grid->itemAtPosition(0, 1) != nullptr;
    if (sideBySide == now) return;
    m_grid->removeItem(m_columns[1]);
    // A layout taken out keeps its parent, and addLayout refuses a layout that has one.
    m_columns[1]->setParent(nullptr);
    if (sideBySide) {
        m_grid->addLayout(m_columns[1], 0, 1);
        m_grid->setColumnStretch(1, 1);
    } else {
        m_grid->addLayout(m_columns[1], 1, 0);
        m_grid->setColumnStretch(1, 0);
    }
}

bool SpecForm::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_viewport && event->type() == QEvent::Resize) reflow();
    return QWidget::eventFilter(watched, event);
}

QWidget* SpecForm::fieldEditor(const QString& path) const {
    const auto it = m_fields.find(path);
    return it == m_fields.end() ? nullptr : it->second.editor;
}

QLabel* SpecForm::fieldLabel(const QString& path) const {
    const auto field = m_fields.find(path);
    const auto form = m_rowForms.find(path);
    if (field == m_fields.end() || form == m_rowForms.end()) return nullptr;
    const auto taken = m_takenLabels.find(field->second.row);
    QWidget* label = taken != m_takenLabels.end() ? taken->second : form->second->labelForField(field->second.row);
    return qobject_cast<QLabel*>(label);
}

QLabel* SpecForm::fieldIssueLabel(const QString& path) const {
    const auto it = m_fields.find(path);
    return it == m_fields.end() ? nullptr : it->second.issue;
}

QString SpecForm::microBatchesText() const {
    return m_microBatches->text();
}

void SpecForm::reloadClusterProfiles() {
    *m_clusterProfiles = ClusterProfileListModel::scan();
    const auto cluster = m_fields.find(QStringLiteral("launch.cluster"));
    if (cluster != m_fields.end()) cluster->second.refresh();
}

// ---- state ----------------------------------------------------------------------------------

void SpecForm::refresh() {
    // Every refresh leaves an editor alone when it already shows the value, so text being typed
    // (and text that does not parse yet) stays as it is.
    for (auto& [path, field] : m_fields)
        if (field.refresh) field.refresh();
    refreshVisibility();
    refreshDerived();
}

void SpecForm::setRowVisible(const QString& path, bool visible) {
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

void SpecForm::refreshVisibility() {
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
    for (const auto& [key, shownWhen] : m_shownWhen) setRowVisible(key, shownWhen(now));
    for (const auto& [box, form] : m_sections) box->setVisible(form->rowCount() > 0);
}

void SpecForm::refreshDerived() {
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

void SpecForm::showIssues() {
    for (auto& [path, field] : m_fields) {
        bool error = false;
        const QStringList lines = issueLines(*m_model, path, &error);
        field.issue->setWrappedText(lines.join(QChar('\n')));
        field.issue->setStyleSheet(QStringLiteral("color: %1;").arg((error ? kErrorColor : kWarningColor).name()));
        field.issue->setVisible(!lines.isEmpty());
        field.issue->setProperty("severity", lines.isEmpty() ? QString() : error ? QStringLiteral("error")
                                                                                 : QStringLiteral("warning"));
    }
}

} // namespace parallax

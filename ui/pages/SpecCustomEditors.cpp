#include "ui/pages/SpecCustomEditors.h"

#include "core/spec/ModelDimensionEdits.h"
#include "core/spec/ModelDims.h"
#include "ui/models/SpecFormModel.h"
#include "ui/widgets/FileDialogs.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalBlocker>
#include <QToolButton>

namespace parallax {

namespace {

QString q(const std::string& s) {
    return QString::fromStdString(s);
}

QStringList qList(const std::vector<std::string>& v) {
    QStringList out;
    for (const std::string& s : v) out << q(s);
    return out;
}

} // namespace

FieldEditor SpecCustomEditors::modelPreset(SpecFormModel* model, const FieldInfo& info, ConfirmDiscard confirm) {
    auto* presetRow = new QWidget;
    auto* presetLayout = new QHBoxLayout(presetRow);
    presetLayout->setContentsMargins(0, 0, 0, 0);
    auto* combo = new QComboBox(presetRow);
    auto* reset = new QPushButton(tr("Reset to preset"), presetRow);
    reset->setToolTip(tr("Drop the dimensions set by hand (shown in bold)"));
    presetLayout->addWidget(combo, 1);
    presetLayout->addWidget(reset);
    const auto refresh = [model, combo, reset] {
        const RunSpec& s = model->spec();
        const QSignalBlocker block(combo);
        combo->clear();
        if (s.model.kind.known())
            for (const std::string& p : modelPresets(s.model.kind.value())) combo->addItem(q(p), q(p));
        combo->addItem(tr("custom"), QStringLiteral("custom"));
        int index = combo->findData(q(s.model.preset));
        if (index < 0) {
            combo->addItem(tr("%1 (unknown)").arg(q(s.model.preset)), q(s.model.preset));
            index = combo->count() - 1;
        }
        combo->setCurrentIndex(index);
        reset->setEnabled(hasDimensionOverrides(s.model));
    };
    QObject::connect(combo, &QComboBox::activated, model, [model, combo, confirm, refresh](int index) {
        const QString preset = combo->itemData(index).toString();
        // A preset drops the dimensions set by hand; those changed since the spec was loaded
        // would be lost.
        const QStringList changed =
            preset == QLatin1String("custom")
                ? QStringList()
                : qList(dimensionsChangedSince(model->spec().model, model->loadedSpec().model));
        if (!changed.isEmpty() &&
            !confirm(tr("Model preset"), tr("The preset %1 replaces the dimensions set by hand (%2).")
                                             .arg(preset, changed.join(QStringLiteral(", "))))) {
            refresh(); // back to what the spec says
            return;
        }
        model->edit(QStringLiteral("model.preset"), [preset](RunSpec& s) { choosePreset(s, preset.toStdString()); });
    });
    QObject::connect(reset, &QPushButton::clicked, model,
                     [model] { model->edit(QStringLiteral("model.preset"), [](RunSpec& s) { resetToPreset(s); }); });
    return {presetRow, refresh, SpecFieldEditors::fieldText(info.help)};
}

SpecCustomEditors::PathRow SpecCustomEditors::pathRow(SpecFormModel* model, const QString& fieldPath) {
    PathRow r;
    r.row = new QWidget;
    auto* layout = new QHBoxLayout(r.row);
    layout->setContentsMargins(0, 0, 0, 0);
    r.path = new QLineEdit(r.row);
    r.path->setObjectName(fieldPath + QStringLiteral(".edit"));
    r.browse = new QToolButton(r.row);
    r.browse->setText(tr("Browse…"));
    layout->addWidget(r.path, 1);
    layout->addWidget(r.browse);
    QObject::connect(r.path, &QLineEdit::textEdited, model,
                     [model, fieldPath](const QString& text) { model->setField(fieldPath, text); });
    return r;
}

FieldEditor SpecCustomEditors::dataPath(SpecFormModel* model, const QString& fieldPath, const FieldInfo& info) {
    const PathRow r = pathRow(model, fieldPath);
    QWidget* pathRow = r.row;
    QLineEdit* path = r.path;
    QToolButton* browse = r.browse;
    QObject::connect(browse, &QToolButton::clicked, model, [model, pathRow] {
        const RunSpec& s = model->spec();
        const QString start = s.data.path.empty() ? q(defaultDataPath(s.data.kind)) : q(s.data.path);
        const QString chosen =
            s.data.kind == DataKind::Text ? FileDialogs::openFile(pathRow, tr("Text file"), start, tr("Text (*.txt);;All files (*)"))
            : s.data.kind == DataKind::Conversations
                ? FileDialogs::openFile(pathRow, tr("Conversations"), start,
                                        tr("Conversations (*.json *.jsonl);;All files (*)"))
                : FileDialogs::existingDirectory(pathRow, tr("Data folder"), start);
        if (!chosen.isEmpty()) model->setField(QStringLiteral("data.path"), chosen);
    });
    const auto refresh = [model, path, browse] {
        const RunSpec& s = model->spec();
        const QString value = q(s.data.path);
        if (path->text() != value) path->setText(value);
        const QString fallback = q(defaultDataPath(s.data.kind));
        path->setPlaceholderText(s.data.kind == DataKind::Synthetic ? tr("not used by synthetic data")
                                 : fallback.isEmpty()                ? tr("required")
                                                                     : tr("default: %1").arg(fallback));
        const bool used = s.data.kind != DataKind::Synthetic || !s.data.path.empty();
        path->setEnabled(used);
        browse->setEnabled(used);
    };
    return {pathRow, refresh, SpecFieldEditors::fieldText(info.help)};
}

FieldEditor SpecCustomEditors::modelFolder(SpecFormModel* model, const QString& fieldPath, const FieldInfo& info) {
    const PathRow r = pathRow(model, fieldPath);
    QWidget* row = r.row;
    QLineEdit* path = r.path;
    QToolButton* browse = r.browse;
    path->setPlaceholderText(tr("empty: the preset, randomly initialized"));
    browse->setToolTip(tr("A Hugging Face model folder: config.json and its *.safetensors"));
    QObject::connect(browse, &QToolButton::clicked, model, [model, row, fieldPath] {
        const QString chosen = FileDialogs::existingDirectory(row, tr("Model folder"), q(model->spec().model.from));
        if (!chosen.isEmpty()) model->setField(fieldPath, chosen);
    });
    const auto refresh = [model, path] {
        const QString value = q(model->spec().model.from);
        if (path->text() != value) path->setText(value);
    };
    return {row, refresh, SpecFieldEditors::fieldText(info.help)};
}

FieldEditor SpecCustomEditors::clusterChoice(SpecFormModel* model, const QString& path, const FieldInfo& info,
                                             std::shared_ptr<const ClusterProfiles> profiles) {
    // Which hosts: a cluster profile (the Cluster page lists and checks them) or the list below.
    auto* combo = new QComboBox;
    QObject::connect(combo, &QComboBox::activated, model, [model, combo, path](int index) {
        const QString value = combo->itemData(index).toString();
        model->edit(path, [value](RunSpec& s) {
            s.launch.cluster = value.toStdString();
            // The profile names the hosts; a list beside it would be a second answer.
            if (!value.isEmpty()) s.launch.hosts.clear();
        });
    });
    const auto refresh = [model, combo, profiles] {
        const QString value = q(model->spec().launch.cluster);
        const QSignalBlocker block(combo);
        combo->clear();
        combo->addItem(tr("hosts listed in the spec"), QString());
        combo->setItemData(0, tr("launch.hosts: one \"name:slots\" per line below"), Qt::ToolTipRole);
        for (const ClusterProfileListModel::Entry& e : *profiles) {
            const QString text = e.profile ? (e.profile->hosts.size() == 1 ? tr("%1 (1 host)").arg(e.name())
                                                                    : tr("%1 (%2 hosts)").arg(e.name()).arg(e.profile->hosts.size()))
                                           : tr("%1 (cannot be read)").arg(e.name());
            combo->addItem(text, e.reference());
            combo->setItemData(combo->count() - 1, e.error.isEmpty() ? e.path : e.path + QChar('\n') + e.error,
                               Qt::ToolTipRole);
        }
        int index = combo->findData(value);
        if (index < 0) {
            // A profile this console does not list (a path, or a name found nowhere): shown as it
            // is, so that the validator's or preflight's message about it makes sense.
            const bool file = value.contains(QChar('/')) && QFileInfo(value).isFile();
            combo->addItem(file ? value : tr("%1 (no such profile)").arg(value), value);
            index = combo->count() - 1;
        }
        combo->setCurrentIndex(index);
    };
    return {combo, refresh, SpecFieldEditors::fieldText(info.help)};
}

FieldEditor SpecCustomEditors::deviceMemory(SpecFormModel* model) {
    auto* memory = new QDoubleSpinBox;
    memory->setRange(1, 4096);
    memory->setDecimals(0);
    memory->setSuffix(tr(" GiB"));
    memory->setValue(SpecFormModel::kDefaultCudaMemoryGiB);
    QObject::connect(memory, &QDoubleSpinBox::valueChanged, model, &SpecFormModel::setCudaMemoryGiB);
    return {memory, [] {}, tr("Memory of one GPU, for the estimates (an H200 has 141 GiB)")};
}

} // namespace parallax

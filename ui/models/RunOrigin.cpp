#include "ui/models/RunOrigin.h"

#include "core/spec/ModelKinds.h"
#include "core/spec/SpecIO.h"

#include <QDir>
#include <QFileInfo>

namespace parallax {

namespace {

QString q(const std::string& s) {
    return QString::fromStdString(s);
}

// The last name of a folder's path, trailing slashes aside; the path itself when it has none.
QString folderName(const QString& path) {
    const QString name = QFileInfo(QDir::cleanPath(path)).fileName();
    return name.isEmpty() ? path : name;
}

} // namespace

RunOrigin RunOrigin::of(const RunSpec& spec) {
    RunOrigin o;
    o.kind = q(spec.model.kind.name());
    const ModelKindInfo* info = modelKindInfo(spec.model.kind);
    o.published = info && publishedModel(*info);
    o.from = q(spec.model.from);
    if (!o.from.isEmpty()) {
        o.baseModel = folderName(o.from);
        o.baseModelTip = o.from;
    } else {
        o.preset = q(spec.model.preset);
        o.baseModel = o.preset.isEmpty() ? o.kind : QStringLiteral("%1 %2").arg(o.kind, o.preset);
    }
    if (!o.published) {
        o.mode = QString(QChar(0x2014)); // an em dash: the kind has no [finetune]
    } else if (spec.finetune.mode == FinetuneMode::Lora) {
        o.lora = true;
        o.loraRank = spec.finetune.lora_r;
        o.mode = tr("LoRA r %1").arg(o.loraRank);
    } else {
        o.mode = q(spec.finetune.mode.name());
    }
    return o;
}

RunOrigin RunOrigin::of(const RunRecord& record) {
    if (record.spec_toml.empty()) return {};
    try {
        return of(parseSpec(record.spec_toml, "run " + std::to_string(record.id) + " spec"));
    } catch (const std::exception& e) {
        RunOrigin o;
        o.kind = q(record.model_kind);
        o.specError = q(e.what());
        o.baseModelTip = o.specError;
        return o;
    }
}

ModelExportCheck ModelExportCheck::of(const RunRecord& record, const RunOrigin& origin,
                                      std::optional<int64_t> checkpoints) {
    ModelExportCheck c;
    if (!origin.specError.isEmpty()) {
        c.why = tr("Its stored spec cannot be read: %1").arg(origin.specError);
    } else if (!origin.hasSpec()) {
        c.why = tr("The store holds no spec for this run, so what it trained is not known");
    } else if (!origin.published) {
        c.why = tr("model.kind = \"%1\" has no published form to export; export writes runs of %2")
                    .arg(origin.kind, q(modelKindNames(publishedModel)));
    } else if (origin.from.isEmpty()) {
        c.why = tr("The run started from a preset (model.preset = \"%1\"), so there is no config or tokenizer to "
                   "copy; export writes runs started from model.from")
                    .arg(origin.preset);
    } else if (record.run_dir.empty()) {
        c.why = tr("The run has no folder in the store, so its checkpoints cannot be found");
    } else if (!checkpoints) {
        c.why = tr("Looking for the run's checkpoints…");
    } else if (*checkpoints <= 0) {
        c.why = tr("The run has no checkpoint yet: runs write one every train.checkpoint_every steps, at a stop "
                   "and at the end");
    } else {
        c.allowed = true;
        c.adapterOnly = origin.lora;
    }
    return c;
}

} // namespace parallax

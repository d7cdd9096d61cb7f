#include "ui/models/ModelSourceSummary.h"

#include "core/formats/ModelFolder.h"
#include "core/spec/Estimates.h"
#include "core/spec/FinetuneSummary.h"
#include "core/spec/ModelDims.h"
#include "core/spec/ModelKinds.h"

#include <QDir>
#include <QFileInfo>

namespace parallax {

namespace {

QString q(const std::string& s) {
    return QString::fromStdString(s);
}

QString count(double n) {
    return q(formatCount(n));
}

// "28 layers × 3584 (28 heads, 4 key/value), FFN 18944, vocabulary 152064; vision tower 32 × 1280 (16 heads)"
QString sizes(const ModelDims& d, const ModelKindInfo& kind) {
    QString out = ModelSourceSummary::tr("%1 layers × %2 (%3 heads, %4 key/value), FFN %5")
                      .arg(d.layers)
                      .arg(d.dim)
                      .arg(d.heads)
                      .arg(d.kvHeads())
                      .arg(d.ffn);
    if (!readsLatents(kind)) {
        out += ModelSourceSummary::tr(", vocabulary %1").arg(d.vocab);
        if (d.tie_embeddings) out += ModelSourceSummary::tr(", head tied to the embedding");
    }
    if (hasVisionTower(kind))
        out += ModelSourceSummary::tr("; vision tower %1 × %2 (%3 heads), %4 × %4 patches merged")
                   .arg(d.vision_layers)
                   .arg(d.vision_dim)
                   .arg(d.vision_heads)
                   .arg(d.vision_merge);
    return out;
}

QString origin(const RunSpec& spec, const ModelKindInfo& kind) {
    const QString name = QString::fromLatin1(kind.name);
    if (spec.model.from.empty())
        return ModelSourceSummary::tr("%1, preset %2, randomly initialized (model.from is empty)")
            .arg(name, spec.model.preset.empty() ? ModelSourceSummary::tr("(default)") : q(spec.model.preset));
    QString what;
    try {
        what = q(describeModel(readModelFolder(spec.model.from)));
    } catch (const std::exception& e) {
        return q(e.what());
    }
    const QString folder = QFileInfo(q(spec.model.from)).fileName();
    return ModelSourceSummary::tr("%1 from %2 (%3); the run starts from its weights")
        .arg(name, folder, what.isEmpty() ? ModelSourceSummary::tr("config.json") : what);
}

} // namespace

bool ModelSourceSummary::applies(const RunSpec& spec) {
    const ModelKindInfo* kind = modelKindInfo(spec.model.kind);
    return kind != nullptr && publishedModel(*kind);
}

QString ModelSourceSummary::tokenizerFiles(const QString& folder) {
    const QDir dir(folder);
    for (const QString& sub : {QString(), QStringLiteral("tokenizer")}) {
        const QString prefix = sub.isEmpty() ? QString() : sub + QLatin1Char('/');
        if (dir.exists(prefix + QStringLiteral("tokenizer.json"))) return prefix + QStringLiteral("tokenizer.json");
        if (dir.exists(prefix + QStringLiteral("vocab.json")) && dir.exists(prefix + QStringLiteral("merges.txt")))
            return tr("%1vocab.json and %1merges.txt (Qwen2Tokenizer)").arg(prefix);
    }
    return {};
}

QStringList ModelSourceSummary::lines(const RunSpec& spec, const Estimates* estimates, const QString& whyNone) {
    const ModelKindInfo* kind = modelKindInfo(spec.model.kind);
    if (kind == nullptr || !publishedModel(*kind)) return {};
    QStringList out;
    out << origin(spec, *kind);
    if (estimates == nullptr) {
        out << whyNone;
        return out;
    }
    const ModelDims d = resolveModel(spec); // resolves: the form has estimates of it
    const Estimates& e = *estimates;
    out << sizes(d, *kind);
    const double share = e.params > 0 ? 100.0 * static_cast<double>(e.trainable_params) / static_cast<double>(e.params) : 0;
    out << tr("%1 parameters; %2 train (%3 %)")
               .arg(count(static_cast<double>(e.params)), count(static_cast<double>(e.trainable_params)))
               .arg(share, 0, 'g', share < 1 ? 2 : 3);
    for (const PartTraining& part : partTraining(d, spec.finetune)) out << q(describePartTraining(part, spec.finetune));
    if (!spec.model.from.empty() && !readsLatents(*kind)) {
        const QString files = tokenizerFiles(q(spec.model.from));
        out << (files.isEmpty() ? tr("no tokenizer in the folder (tokenizer.json, or vocab.json and merges.txt): "
                                     "data.kind = \"conversations\" needs one")
                                : tr("tokenizer: %1").arg(files));
    }
    return out;
}

} // namespace parallax

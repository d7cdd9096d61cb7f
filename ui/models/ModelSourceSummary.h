#pragma once

#include "core/spec/RunSpec.h"

#include <QCoreApplication>
#include <QStringList>

namespace parallax {

// What the New run page says of a published model (qwen2_5_vl, qwen2, qwen_image) beneath
// model.from: where it comes from (the folder's config.json and what it names, or the preset at
// random initialization), its sizes, its parameters and how many of them train, its tokenizer, and
// what each part does under [finetune] (trains, frozen, LoRA on which Linears). Reads only
// config files and file names: cheap enough for every edit.
class ModelSourceSummary {
    Q_DECLARE_TR_FUNCTIONS(ModelSourceSummary)
public:
    static bool applies(const RunSpec& spec);
    // The lines; one saying why when the model cannot be resolved.
    static QStringList lines(const RunSpec& spec);
    // "tokenizer.json", "vocab.json and merges.txt (Qwen2Tokenizer)"; "" when `folder` holds none.
    static QString tokenizerFiles(const QString& folder);
};

} // namespace parallax

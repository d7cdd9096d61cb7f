#pragma once

#include "core/spec/Estimates.h"
#include "core/spec/RunSpec.h"

#include <QCoreApplication>
#include <QStringList>

namespace parallax {

// What the New run page says of a published model (qwen2_5_vl, qwen2, qwen_image) beneath
// model.from: where it comes from (the folder's config.json and what it names, or the preset at
// random initialization), its sizes, its parameters and how many of them train, its tokenizer, and
// what each part does under [finetune] (trains, frozen, LoRA on which Linears). Reads only
// config files and file names, once per validation of the form.
class ModelSourceSummary {
    Q_DECLARE_TR_FUNCTIONS(ModelSourceSummary)
public:
    static bool applies(const RunSpec& spec);
    // The lines, with the figures of `estimates` (the spec's, as the form's validation made them);
    // where there are none, `whyNone` in their place.
    static QStringList lines(const RunSpec& spec, const Estimates* estimates, const QString& whyNone);
    // "tokenizer.json", "vocab.json and merges.txt (Qwen2Tokenizer)"; "" when `folder` holds none.
    static QString tokenizerFiles(const QString& folder);
};

} // namespace parallax

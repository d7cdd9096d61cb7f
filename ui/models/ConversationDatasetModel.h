#pragma once

#include "core/spec/ModelDims.h"
#include "core/spec/RunSpec.h"
#include "core/spec/SpecValidator.h"

#include <QObject>
#include <QString>
#include <QStringList>
#include <QTimer>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace parallax {

struct ConversationDatasetSummary;

// The conversations dataset of a spec that fine-tunes a published model (qwen2_5_vl, qwen2) on it,
// as a run would read it (core/conversations/ConversationDatasetSummary): samples, images per
// sample, visual tokens per sample at data.max_pixels, the samples model.seq_len would drop, and
// its first sample as the model sees it with the trained spans marked. Read off the GUI thread
// (every sample is tokenized and every image's header read) whenever the dataset, the model folder,
// the pixel bounds or the sequence length change. Without the conversation readers in this build
// it applies to no spec.
class ConversationDatasetModel : public QObject {
    Q_OBJECT
public:
    static constexpr int kDebounceMs = 300;

    explicit ConversationDatasetModel(QObject* parent = nullptr);
    ~ConversationDatasetModel() override;

    static bool applies(const RunSpec& spec);
    // Reads the dataset of `spec` (after a short quiet period) when what it is read with differs
    // from the last read; nothing when the spec does not apply.
    void setSpec(const RunSpec& spec);
    void refresh();

    bool appliesNow() const { return m_applies; }
    bool isKnown() const { return m_known; }
    // What was read, for the spec as it is now (null while unknown).
    const ConversationDatasetSummary* summary() const { return m_summary.get(); }

    // The summary's lines (conversationSummaryLines), "Reading the dataset…" while a read is under way.
    QStringList summaryLines() const;
    // The first sample as HTML: the chat template's text, the trained spans highlighted.
    QString previewHtml() const;
    // A warning while a run of the spec would refuse the dataset, with the fix.
    std::vector<SpecIssue> issues() const;

signals:
    void changed();

private:
    void read();

    QTimer m_debounce;
    RunSpec m_spec;       // as last set
    ModelDims m_dims;     // its model, resolved once per setSpec (config.json read)
    std::string m_key;    // what the last read was made with
    bool m_applies = false;
    bool m_known = false;
    uint64_t m_generation = 0;
    std::shared_ptr<const ConversationDatasetSummary> m_summary;
};

} // namespace parallax

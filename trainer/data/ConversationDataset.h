#pragma once

#include "core/conversations/ConversationEncoder.h"
#include "trainer/data/Dataset.h"

#include <memory>

namespace parallax {

// data.kind = "conversations" for qwen2_5_vl and qwen2 (docs/spec.md): chats read by
// readConversations, tokenized with the model folder's tokenizer.json in Qwen's chat template, images
// through Qwen's image processor. Every sample is checked when the dataset opens, images by their
// headers only: a sample whose cut at model.seq_len would fall inside an image is dropped and counted
// (data.on_truncate = "drop") or refused; one whose image cannot be read fails the run naming it or is
// skipped and counted (data.on_bad_sample). A batch is padded on the right to its longest sample, and
// brings labels on the assistant answers and M-RoPE positions.
class ConversationDataset : public Dataset {
public:
    // `tokenizer`: a tokenizer.json or a folder holding one (model.from). Throws DataError.
    ConversationDataset(const DataSpec& data, const ModelDims& dims, const std::string& tokenizer);

    int64_t size() const override { return static_cast<int64_t>(m_kept.size()); }
    Batch makeBatch(const std::vector<int64_t>& indices, int64_t step) const override;
    std::string describe() const override;

private:
    DataSpec m_data;
    ModelDims m_dims;
    std::vector<Conversation> m_samples;
    std::vector<size_t> m_kept; // the samples trained on
    std::unique_ptr<ConversationEncoder> m_encoder;
    int32_t m_padId = 0;
    size_t m_tooLong = 0, m_badImages = 0;
};

} // namespace parallax

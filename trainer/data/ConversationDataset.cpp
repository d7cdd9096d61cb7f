#include "trainer/data/ConversationDataset.h"

#include "core/conversations/ConversationSetup.h"
#include "core/spec/Choice.h"
#include "core/spec/ModelKinds.h"
#include "trainer/data/DataError.h"
#include "trainer/data/DatasetUtils.h"
#include "trainer/models/QwenImageTokens.h"

#include <optional>

namespace parallax {

ConversationDataset::ConversationDataset(const DataSpec& data, const ModelDims& dims, const std::string& tokenizer)
    : m_data(data), m_dims(dims) {
    std::optional<Tokenizer> loaded;
    try {
        loaded.emplace(conversationTokenizer(tokenizer, dims));
    } catch (const ConversationError& e) {
        throw DataError(e.what());
    }
    const Tokenizer& t = *loaded;
    const ConversationLimits limits = conversationLimits(data, dims);
    try {
        m_encoder = std::make_unique<ConversationEncoder>(t, limits);
        m_samples = readConversations(data.path);
    } catch (const std::exception& e) {
        throw DataError(std::string("data.path: ") + e.what());
    }
    m_padId = t.tokenId("<|endoftext|>").value_or(0);
    for (size_t i = 0; i < m_samples.size(); ++i) {
        try {
            m_encoder->encode(m_samples[i], /*pixels=*/false);
            m_kept.push_back(i);
        } catch (const BadConversation& e) {
            const bool drop = e.reason == BadConversation::Reason::TooLong ? data.on_truncate == OnTruncate::Drop
                              : e.reason == BadConversation::Reason::Image ? data.on_bad_sample == OnBadSample::Skip
                                                                            : false;
            if (!drop) throw DataError(e.what() + std::string(e.reason == BadConversation::Reason::TooLong
                                                                   ? " (data.on_truncate = \"drop\" leaves such samples out)"
                                                              : e.reason == BadConversation::Reason::Image
                                                                   ? " (data.on_bad_sample = \"skip\" leaves it out)"
                                                                   : ""));
            (e.reason == BadConversation::Reason::TooLong ? m_tooLong : m_badImages) += 1;
        }
    }
    if (m_kept.empty()) throw DataError("data.path = " + data.path + ": no sample is left to train on (" + describe() + ")");
}

Batch ConversationDataset::makeBatch(const std::vector<int64_t>& indices, int64_t /*step*/) const {
    requireIndices(indices, size(), "conversations dataset");
    std::vector<EncodedConversation> encoded;
    encoded.reserve(indices.size());
    size_t longest = 0;
    for (int64_t i : indices) {
        try {
            encoded.push_back(m_encoder->encode(m_samples[m_kept[static_cast<size_t>(i)]]));
        } catch (const BadConversation& e) { // pixel data damaged past a sound header
            throw DataError(e.what());
        }
        longest = std::max(longest, encoded.back().ids.size());
    }
    const int64_t b = static_cast<int64_t>(encoded.size()), t = static_cast<int64_t>(longest);
    Batch batch;
    batch.sample_index = indices;
    batch.tokens = torch::full({b, t}, m_padId, torch::kInt64);
    batch.labels = torch::full({b, t}, -100, torch::kInt64);
    batch.attention_mask = torch::zeros({b, t}, torch::kBool);
    std::vector<int64_t> grids;
    size_t values = 0;
    for (const EncodedConversation& e : encoded) values += e.pixels.size();
    std::vector<float> pixels;
    pixels.reserve(values);
    auto tokens = batch.tokens.accessor<int64_t, 2>();
    auto labels = batch.labels.accessor<int64_t, 2>();
    auto mask = batch.attention_mask.accessor<bool, 2>();
    for (int64_t s = 0; s < b; ++s) {
        const EncodedConversation& e = encoded[static_cast<size_t>(s)];
        const int64_t n = static_cast<int64_t>(e.ids.size());
        for (int64_t i = 0; i < n; ++i) {
            tokens[s][i] = e.ids[static_cast<size_t>(i)];
            labels[s][i] = e.labels[static_cast<size_t>(i)];
            mask[s][i] = true;
        }
        pixels.insert(pixels.end(), e.pixels.begin(), e.pixels.end());
        for (const auto& g : e.grids) grids.insert(grids.end(), g.begin(), g.end());
    }
    if (!grids.empty()) {
        const int64_t rowValues = 3 * m_dims.vision_temporal * m_dims.patch * m_dims.patch;
        batch.image_grid = torch::tensor(grids, torch::kInt64).view({-1, 3});
        batch.pixel_values = torch::from_blob(pixels.data(), {static_cast<int64_t>(pixels.size()) / rowValues, rowValues},
                                              torch::kFloat32)
                                 .clone();
    }
    if (hasVisionTower(modelKindInfo(m_dims.kind)))
        batch.positions = findImageTokens(batch.tokens, batch.attention_mask, batch.image_grid, m_dims, indices).positions;
    withoutFullMask(batch, batch.attention_mask);
    return batch;
}

std::string ConversationDataset::describe() const {
    std::string out = "conversations: " + std::to_string(m_kept.size()) + " of " + std::to_string(m_samples.size()) +
                      " samples from " + m_data.path;
    if (m_tooLong) out += "; " + std::to_string(m_tooLong) + " dropped (longer than model.seq_len inside an image)";
    if (m_badImages) out += "; " + std::to_string(m_badImages) + " skipped (an image could not be read)";
    return out;
}

} // namespace parallax

#include "core/conversations/ConversationSetup.h"

#include "core/spec/ModelKinds.h"

#include <optional>

namespace parallax {

namespace {

void requireToken(const Tokenizer& t, const char* token, int64_t modelId, const char* field) {
    const std::optional<int32_t> id = t.tokenId(token);
    if (modelId >= 0 && (!id || *id != modelId))
        throw ConversationError(t.source() + ": " + token + " is " + (id ? std::to_string(*id) : "missing") +
                                ", but the model's " + field + " is " + std::to_string(modelId) +
                                ": the tokenizer and config.json disagree");
}

} // namespace

ConversationLimits conversationLimits(const DataSpec& data, const ModelDims& dims) {
    ConversationLimits limits;
    limits.seqLen = dims.seq_len;
    limits.images = hasVisionTower(modelKindInfo(dims.kind));
    limits.image.resize.minPixels = data.min_pixels;
    limits.image.resize.maxPixels = data.max_pixels;
    if (limits.images) {
        limits.image.patch = dims.patch;
        limits.image.merge = dims.vision_merge;
        limits.image.temporal = dims.vision_temporal;
        limits.image.resize.factor = dims.patch * dims.vision_merge;
    }
    return limits;
}

Tokenizer conversationTokenizer(const std::string& source, const ModelDims& dims) {
    if (source.empty())
        throw ConversationError("data.kind = \"conversations\" tokenizes with the model's tokenizer.json: set "
                                "model.from to a Hugging Face folder that holds one");
    std::optional<Tokenizer> loaded;
    try {
        loaded.emplace(Tokenizer::load(source));
    } catch (const std::exception& e) {
        throw ConversationError(std::string("model.from: ") + e.what());
    }
    const Tokenizer& t = *loaded;
    if (t.idCount() > dims.vocab)
        throw ConversationError(t.source() + " has ids up to " + std::to_string(t.idCount() - 1) +
                                ", but the model's vocabulary holds " + std::to_string(dims.vocab) +
                                " (vocab_size): use the tokenizer of model.from");
    if (hasVisionTower(modelKindInfo(dims.kind))) {
        requireToken(t, "<|image_pad|>", dims.tokens.image_pad, "image_token_id");
        requireToken(t, "<|vision_start|>", dims.tokens.vision_start, "vision_start_token_id");
    }
    return std::move(*loaded);
}

} // namespace parallax

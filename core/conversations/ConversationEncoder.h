#pragma once

#include "core/conversations/ConversationFile.h"
#include "core/image/QwenImageRows.h"
#include "core/text/QwenChat.h"

#include <array>
#include <cstdint>
#include <vector>

namespace parallax {

// What one sample of a conversations dataset may take.
struct ConversationLimits {
    int64_t seqLen = 2048;      // tokens, visual tokens included
    QwenImageRule image;        // resize bounds (data.min_pixels, data.max_pixels) and patching
    bool images = true;         // the model has a vision tower; false: a sample with an image is refused
};

// A sample ready for the model: token ids, labels (the id inside assistant answers, -100 elsewhere),
// and its images as patch rows with their grids (frames, rows, columns in patches), in order.
struct EncodedConversation {
    std::vector<int32_t> ids;
    std::vector<int32_t> labels;
    std::vector<float> pixels;                   // patchRows x rowValues
    std::vector<std::array<int64_t, 3>> grids;   // one per image kept
    bool truncated = false;                      // text was cut at seqLen
};

// A sample that cannot be used as it is: an image that cannot be read, or a cut at seqLen that would
// fall inside an image. The message names the sample (file and line) and the reason.
class BadConversation : public ConversationError {
public:
    enum class Reason { Image, TooLong, NoVision };
    BadConversation(Reason reason, const std::string& message) : ConversationError(message), reason(reason) {}
    Reason reason;
};

// Conversations as Qwen2-VL and Qwen2.5-VL read them: images through the published image processor
// (qwenImageRows), one <|image_pad|> per merged unit, the ChatML template (QwenChatTemplate), labels
// on the assistant answers, text cut at seqLen. Every const function may run on many threads.
class ConversationEncoder {
public:
    ConversationEncoder(const Tokenizer& tokenizer, ConversationLimits limits);
    // Throws BadConversation. Without `pixels`, images are read only as far as their headers (their
    // sides give their tokens): what a sample will take, cheaply, for checking a dataset.
    EncodedConversation encode(const Conversation& conversation, bool pixels = true) const;
    const ConversationLimits& limits() const { return m_limits; }

private:
    QwenChatTemplate m_template;
    ConversationLimits m_limits;
    int32_t m_visionStart = -1, m_visionEnd = -1;
};

} // namespace parallax

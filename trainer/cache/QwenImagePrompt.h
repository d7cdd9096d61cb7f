#pragma once

#include "core/text/QwenChat.h"

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// How Qwen-Image turns a prompt into the text encoder's input: the prompt as the user's message of
// a ChatML conversation whose system message asks for a description of the image, ending with the
// assistant's header. The encoder reads the whole conversation; the transformer gets the states of
// what follows the template's first `drop` tokens (the system message and the user's header), at
// most `max_tokens` of them.
struct QwenImagePromptTemplate {
    std::string system;
    int64_t drop = 0;
    int64_t max_tokens = 1024;
};

// Qwen-Image's text-to-image template: its 34 tokens are dropped.
const QwenImagePromptTemplate& qwenImagePromptTemplate();

// The token ids the text encoder reads for one prompt: the conversation, cut (as the published
// pipeline's tokenizer call truncates) to drop + max_tokens tokens. TokenizerError when the
// tokenizer lacks Qwen's chat tokens; std::invalid_argument when the template's own tokens are
// not the `drop` the template declares (another tokenizer than Qwen's).
class QwenImagePrompt {
public:
    QwenImagePrompt(Tokenizer tokenizer, QwenImagePromptTemplate format);

    std::vector<int32_t> ids(const std::string& prompt) const;
    const QwenImagePromptTemplate& format() const { return m_format; }

private:
    QwenChatTemplate m_chat;
    Tokenizer m_tokenizer;
    QwenImagePromptTemplate m_format;
};

} // namespace parallax

#pragma once

#include "core/captions/ImageCaptions.h"
#include "core/captions/QwenImagePipelines.h"
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
    int64_t max_tokens = 1024; // 0: no cut (the Edit pipelines cut nothing)
    // Edit: the reference images stand before the prompt in the user's message, each resized to
    // about `condition_pixels` (calculate_dimensions: sides multiples of 32 at the image's aspect)
    // with Lanczos before the processor's own resize; "Picture N: " before each (Edit Plus).
    int64_t condition_pixels = 0;
    bool numbered_images = false;
    int64_t most_images = 0; // 0: text to image, no reference image
};

// Qwen-Image's text-to-image template: its 34 tokens are dropped.
const QwenImagePromptTemplate& qwenImagePromptTemplate();
// The template of `pipeline`: Edit and Edit Plus drop 64 tokens and keep the reference images'
// states (Edit: one image at about 1024 x 1024; Edit Plus: any number, "Picture N: ", about 384 x 384).
const QwenImagePromptTemplate& qwenImagePromptTemplate(QwenImagePipeline pipeline);

// The token ids the text encoder reads for one prompt: the conversation, cut (as the published
// pipeline's tokenizer call truncates) to drop + max_tokens tokens. TokenizerError when the
// tokenizer lacks Qwen's chat tokens; std::invalid_argument when the template's own tokens are
// not the `drop` the template declares (another tokenizer than Qwen's).
class QwenImagePrompt {
public:
    QwenImagePrompt(Tokenizer tokenizer, QwenImagePromptTemplate format);

    std::vector<int32_t> ids(const std::string& prompt) const;
    // An Edit prompt: the reference images, `imagePads` <|image_pad|> tokens each (one per merged
    // unit of the image as the processor cuts it), then the prompt. std::invalid_argument when the
    // template takes fewer images.
    std::vector<int32_t> ids(const std::string& prompt, const std::vector<int64_t>& imagePads) const;
    const QwenImagePromptTemplate& format() const { return m_format; }

private:
    QwenChatTemplate m_chat;
    Tokenizer m_tokenizer;
    QwenImagePromptTemplate m_format;
};

} // namespace parallax

#pragma once

#include "core/text/Tokenizer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// One part of a message: text, or an image or a video that stands in the text as
// <|vision_start|>, `pad_tokens` times <|image_pad|> (<|video_pad|>), <|vision_end|>.
struct ChatPart {
    enum class Kind { Text, Image, Video };
    Kind kind = Kind::Text;
    std::string text;
    int64_t pad_tokens = 1; // from the image processor: one per merged patch of the image (or video)

    static ChatPart textPart(std::string text) { return {Kind::Text, std::move(text), 0}; }
    static ChatPart image(int64_t padTokens) { return {Kind::Image, {}, padTokens}; }
    static ChatPart video(int64_t padTokens) { return {Kind::Video, {}, padTokens}; }
};

struct ChatMessage {
    std::string role; // system, user, assistant, ...; written as given
    std::vector<ChatPart> content;

    static ChatMessage text(std::string role, std::string text) {
        return {std::move(role), {ChatPart::textPart(std::move(text))}};
    }
};

struct ChatOptions {
    // Put before a conversation that does not begin with a system message (empty: nothing).
    std::string default_system = "You are a helpful assistant.";
    bool add_generation_prompt = false; // end with "<|im_start|>assistant\n", for generation
    bool add_vision_id = false;         // "Picture 1: " before each image, "Video 1: " before each video
};

struct ChatEncoding {
    std::vector<int32_t> ids;
    // 1 where ids[i] belongs to an assistant answer: its text and the <|im_end|> that ends it (not
    // "<|im_start|>assistant\n" before it, not the line break after it, not vision tokens in it).
    // A token that begins before the answer (the header's line break joined with line breaks that
    // start the answer) is not part of it.
    std::vector<uint8_t> assistant;
    std::string text; // the conversation as written, image pads expanded: decode(ids) == text
};

// The chat template of Qwen2-VL and Qwen2.5-VL (ChatML), as code:
//   <|im_start|>system\nYou are a helpful assistant.<|im_end|>\n        (unless the first message is system)
//   <|im_start|>ROLE\nCONTENT<|im_end|>\n                               (each message)
//   <|im_start|>assistant\n                                             (add_generation_prompt)
// where CONTENT is the parts in order, an image as <|vision_start|><|image_pad|>...<|vision_end|>.
// The text is encoded whole, as Hugging Face's apply_chat_template(tokenize=True) does.
class QwenChatTemplate {
public:
    // TokenizerError when the tokenizer lacks Qwen's chat tokens.
    explicit QwenChatTemplate(Tokenizer tokenizer);

    ChatEncoding encode(const std::vector<ChatMessage>& messages, const ChatOptions& options = {}) const;
    std::string render(const std::vector<ChatMessage>& messages, const ChatOptions& options = {}) const;

private:
    struct Span {
        size_t start;
        size_t end;
    };
    std::string render(const std::vector<ChatMessage>& messages, const ChatOptions& options,
                       std::vector<Span>& answers) const;
    void appendContent(std::string& out, const std::vector<ChatPart>& parts, const ChatOptions& options,
                       int64_t& images, int64_t& videos) const;

    Tokenizer m_tokenizer;
    std::vector<int32_t> m_visionIds; // not labelled inside answers
};

} // namespace parallax

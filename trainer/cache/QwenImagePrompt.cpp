#include "trainer/cache/QwenImagePrompt.h"

#include <stdexcept>

namespace parallax {

const QwenImagePromptTemplate& qwenImagePromptTemplate() {
    static const QwenImagePromptTemplate t{
        "Describe the image by detailing the color, shape, size, texture, quantity, text, spatial relationships "
        "of the objects and background:",
        34, 1024};
    return t;
}

namespace {

std::vector<ChatMessage> conversation(const QwenImagePromptTemplate& format, const std::string& prompt) {
    return {ChatMessage::text("system", format.system), ChatMessage::text("user", prompt)};
}

ChatOptions generationPrompt() {
    ChatOptions o;
    o.default_system.clear();
    o.add_generation_prompt = true;
    return o;
}

} // namespace

QwenImagePrompt::QwenImagePrompt(Tokenizer tokenizer, QwenImagePromptTemplate format)
    : m_chat(tokenizer), m_tokenizer(std::move(tokenizer)), m_format(std::move(format)) {
    // The template's own part: everything before the prompt's text, as the whole conversation
    // encodes it (an empty prompt leaves exactly that part and the closing tokens).
    const std::vector<int32_t> empty = m_chat.encode(conversation(m_format, ""), generationPrompt()).ids;
    const std::vector<int32_t> closing = m_tokenizer.encode("<|im_end|>\n<|im_start|>assistant\n");
    const int64_t own = static_cast<int64_t>(empty.size()) - static_cast<int64_t>(closing.size());
    if (own != m_format.drop)
        throw std::invalid_argument("the tokenizer of " + m_tokenizer.source() + " gives Qwen-Image's prompt template " +
                                    std::to_string(own) + " tokens before the prompt, where the text encoder's states "
                                    "drop " + std::to_string(m_format.drop) + ": it is not Qwen2.5-VL's tokenizer");
}

std::vector<int32_t> QwenImagePrompt::ids(const std::string& prompt) const {
    std::vector<int32_t> ids = m_chat.encode(conversation(m_format, prompt), generationPrompt()).ids;
    const size_t most = static_cast<size_t>(m_format.drop + m_format.max_tokens);
    if (ids.size() > most) ids.resize(most);
    return ids;
}

} // namespace parallax

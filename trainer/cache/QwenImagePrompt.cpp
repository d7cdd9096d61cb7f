#include "trainer/cache/QwenImagePrompt.h"

#include <stdexcept>

namespace parallax {

const QwenImagePromptTemplate& qwenImagePromptTemplate() {
    return qwenImagePromptTemplate(QwenImagePipeline::TextToImage);
}

namespace {

const std::string kEditSystem =
    "Describe the key features of the input image (color, shape, size, texture, objects, background), then explain "
    "how the user's text instruction should alter or modify the image. Generate a new image that meets the user's "
    "requirements while maintaining consistency with the original input where appropriate.";

} // namespace

const QwenImagePromptTemplate& qwenImagePromptTemplate(QwenImagePipeline pipeline) {
    static const QwenImagePromptTemplate textToImage{
        "Describe the image by detailing the color, shape, size, texture, quantity, text, spatial relationships "
        "of the objects and background:",
        34, 1024};
    static const QwenImagePromptTemplate edit{kEditSystem, 64, 0, 1024 * 1024, false,
                                              referenceImagesTaken(QwenImagePipeline::Edit)};
    static const QwenImagePromptTemplate editPlus{kEditSystem, 64, 0, 384 * 384, true,
                                                  referenceImagesTaken(QwenImagePipeline::EditPlus)};
    switch (pipeline) {
    case QwenImagePipeline::TextToImage: return textToImage;
    case QwenImagePipeline::Edit: return edit;
    case QwenImagePipeline::EditPlus: return editPlus;
    }
    return textToImage;
}

namespace {

std::vector<ChatMessage> conversation(const QwenImagePromptTemplate& format, const std::string& prompt,
                                      const std::vector<int64_t>& imagePads = {}) {
    ChatMessage user{"user", {}};
    for (int64_t pads : imagePads) user.content.push_back(ChatPart::image(pads));
    user.content.push_back(ChatPart::textPart(prompt));
    return {ChatMessage::text("system", format.system), user};
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

std::vector<int32_t> QwenImagePrompt::ids(const std::string& prompt) const { return ids(prompt, {}); }

std::vector<int32_t> QwenImagePrompt::ids(const std::string& prompt, const std::vector<int64_t>& imagePads) const {
    const int64_t images = static_cast<int64_t>(imagePads.size());
    if (images > m_format.most_images)
        throw std::invalid_argument(std::to_string(images) + " reference images for a prompt template that takes " +
                                    std::to_string(m_format.most_images) +
                                    (m_format.most_images == 0 ? " (a text-to-image pipeline: edit_image needs a "
                                                                 "QwenImageEditPipeline or QwenImageEditPlusPipeline folder)"
                                                               : " (QwenImageEditPipeline; QwenImageEditPlusPipeline takes several)"));
    ChatOptions options = generationPrompt();
    options.add_vision_id = m_format.numbered_images;
    std::vector<int32_t> ids = m_chat.encode(conversation(m_format, prompt, imagePads), options).ids;
    const size_t most = static_cast<size_t>(m_format.drop + m_format.max_tokens);
    if (m_format.max_tokens > 0 && ids.size() > most) ids.resize(most);
    return ids;
}

} // namespace parallax

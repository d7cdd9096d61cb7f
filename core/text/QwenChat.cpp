#include "core/text/QwenChat.h"

#include "core/text/TokenizerError.h"

#include <algorithm>
#include <stdexcept>

namespace parallax {

namespace {

const char* kImStart = "<|im_start|>";
const char* kImEnd = "<|im_end|>";
const char* kVisionStart = "<|vision_start|>";
const char* kVisionEnd = "<|vision_end|>";
const char* kImagePad = "<|image_pad|>";
const char* kVideoPad = "<|video_pad|>";

// Pads are counted by the image processor; this bounds what one conversation may claim.
constexpr int64_t kMostPadTokens = 1 << 20;

} // namespace

QwenChatTemplate::QwenChatTemplate(Tokenizer tokenizer) : m_tokenizer(std::move(tokenizer)) {
    for (const char* token : {kImStart, kImEnd, kVisionStart, kVisionEnd, kImagePad, kVideoPad}) {
        const auto id = m_tokenizer.tokenId(token);
        if (!id)
            throw TokenizerError(m_tokenizer.source() + " has no " + token +
                                 " token: the Qwen chat template needs a Qwen2 / Qwen2.5 (VL) tokenizer");
        if (std::string(token) != kImStart && std::string(token) != kImEnd)
            m_visionIds.push_back(*id);
    }
}

void QwenChatTemplate::appendContent(std::string& out, const std::vector<ChatPart>& parts, const ChatOptions& options,
                                     int64_t& images, int64_t& videos) const {
    // Adjacent text parts are prepared together: a combining mark that starts one part composes with
    // the character that ends the one before, as in the text the tokenizer sees.
    std::string text;
    const auto flush = [&] {
        out += m_tokenizer.prepare(text);
        text.clear();
    };
    for (const ChatPart& part : parts) {
        if (part.kind == ChatPart::Kind::Text) {
            text += part.text;
            continue;
        }
        flush();
        const bool image = part.kind == ChatPart::Kind::Image;
        if (part.pad_tokens < 1 || part.pad_tokens > kMostPadTokens)
            throw std::invalid_argument(std::string(image ? "an image" : "a video") + " of the conversation stands for " +
                                        std::to_string(part.pad_tokens) + " tokens; it must be 1 to " +
                                        std::to_string(kMostPadTokens));
        if (options.add_vision_id)
            out += image ? "Picture " + std::to_string(++images) + ": " : "Video " + std::to_string(++videos) + ": ";
        out += kVisionStart;
        const std::string pad = image ? kImagePad : kVideoPad;
        out.reserve(out.size() + pad.size() * static_cast<size_t>(part.pad_tokens));
        for (int64_t i = 0; i < part.pad_tokens; ++i)
            out += pad;
        out += kVisionEnd;
    }
    flush();
}

std::string QwenChatTemplate::render(const std::vector<ChatMessage>& messages, const ChatOptions& options,
                                     std::vector<Span>& answers) const {
    std::string out;
    int64_t images = 0, videos = 0;
    if (!options.default_system.empty() && (messages.empty() || messages.front().role != "system"))
        out += std::string(kImStart) + "system\n" + m_tokenizer.prepare(options.default_system) + kImEnd + "\n";
    for (size_t i = 0; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        if (m.role.empty() || m.role.find_first_of("\r\n<>|") != std::string::npos)
            throw std::invalid_argument("message " + std::to_string(i) + " of the conversation has the role \"" + m.role +
                                        "\"; a role is a word such as system, user or assistant");
        out += std::string(kImStart) + m.role + "\n";
        const size_t start = out.size();
        appendContent(out, m.content, options, images, videos);
        out += kImEnd;
        if (m.role == "assistant")
            answers.push_back({start, out.size()});
        out += "\n";
    }
    if (options.add_generation_prompt)
        out += std::string(kImStart) + "assistant\n";
    return out;
}

std::string QwenChatTemplate::render(const std::vector<ChatMessage>& messages, const ChatOptions& options) const {
    std::vector<Span> answers;
    return render(messages, options, answers);
}

ChatEncoding QwenChatTemplate::encode(const std::vector<ChatMessage>& messages, const ChatOptions& options) const {
    ChatEncoding e;
    std::vector<Span> answers;
    e.text = render(messages, options, answers);
    // Every piece of the text is prepared already, so offsets in the prepared text are offsets in it.
    std::vector<uint32_t> starts;
    m_tokenizer.encode(e.text, e.ids, &starts);
    e.assistant.assign(e.ids.size(), 0);
    size_t a = 0;
    for (size_t i = 0; i < e.ids.size(); ++i) {
        while (a < answers.size() && starts[i] >= answers[a].end)
            ++a;
        if (a == answers.size())
            break;
        const bool vision = std::find(m_visionIds.begin(), m_visionIds.end(), e.ids[i]) != m_visionIds.end();
        e.assistant[i] = starts[i] >= answers[a].start && !vision;
    }
    return e;
}

} // namespace parallax

#include "core/conversations/ConversationEncoder.h"

#include "core/image/ImageDecoder.h"
#include "core/image/ImageError.h"
#include "core/text/TokenizerError.h"

#include <stdexcept>

namespace parallax {

namespace {

constexpr int32_t kIgnore = -100;

int32_t requiredToken(const Tokenizer& tokenizer, const char* token) {
    const std::optional<int32_t> id = tokenizer.tokenId(token);
    if (!id) throw TokenizerError(tokenizer.source() + " has no " + token + " token, which Qwen's chat template needs");
    return *id;
}

} // namespace

ConversationEncoder::ConversationEncoder(const Tokenizer& tokenizer, ConversationLimits limits)
    : m_template(tokenizer), m_limits(limits) {
    m_visionStart = requiredToken(tokenizer, "<|vision_start|>");
    m_visionEnd = requiredToken(tokenizer, "<|vision_end|>");
}

EncodedConversation ConversationEncoder::encode(const Conversation& c, bool pixels) const {
    EncodedConversation out;
    std::vector<ChatMessage> messages;
    std::vector<QwenImageRows> images;
    auto read = [&](const std::string& path) {
        if (pixels) return qwenImageRows(decodeImageFile(path).rgb, m_limits.image);
        const ImageInfo info = readImageInfoFile(path);
        const ImageSides sides = smartResize(info.height, info.width, m_limits.image.resize);
        QwenImageRows rows;
        rows.rows = sides.height / m_limits.image.patch;
        rows.columns = sides.width / m_limits.image.patch;
        return rows;
    };
    for (const ConversationMessage& m : c.messages) {
        ChatMessage chat{m.role, {}};
        for (const ConversationPart& p : m.parts) {
            if (!p.image) {
                chat.content.push_back(ChatPart::textPart(p.text));
                continue;
            }
            if (!m_limits.images)
                throw BadConversation(BadConversation::Reason::NoVision,
                                      c.source + ": has an image (" + p.path + "), but the model has no vision tower");
            try {
                images.push_back(read(p.path));
            } catch (const std::exception& e) { // ImageError (naming the file), or smartResize's refusal
                const std::string what = e.what();
                throw BadConversation(BadConversation::Reason::Image,
                                      c.source + ": " + (what.rfind(p.path, 0) == 0 ? "image " + what
                                                                                     : "image " + p.path + ": " + what));
            }
            const QwenImageRows& rows = images.back();
            chat.content.push_back(ChatPart::image(rows.patchRows() / (m_limits.image.merge * m_limits.image.merge)));
        }
        messages.push_back(std::move(chat));
    }
    const ChatEncoding encoded = m_template.encode(messages);
    out.ids = encoded.ids;
    out.labels.resize(out.ids.size());
    for (size_t i = 0; i < out.ids.size(); ++i) out.labels[i] = encoded.assistant[i] ? out.ids[i] : kIgnore;

    // Images whose whole run (vision start to vision end) fits before the cut are kept.
    const size_t limit = static_cast<size_t>(m_limits.seqLen);
    size_t kept = 0, image = 0;
    for (size_t i = 0; i < out.ids.size(); ++i) {
        if (out.ids[i] != m_visionStart) continue;
        size_t end = i;
        while (end < out.ids.size() && out.ids[end] != m_visionEnd) ++end;
        if (i < limit && end >= limit)
            throw BadConversation(BadConversation::Reason::TooLong,
                                  c.source + ": " + std::to_string(out.ids.size()) + " tokens; model.seq_len = " +
                                      std::to_string(limit) + " would cut it inside image " + std::to_string(image + 1));
        if (end < limit) kept = image + 1;
        ++image;
        i = end;
    }
    if (out.ids.size() > limit) {
        out.ids.resize(limit);
        out.labels.resize(limit);
        out.truncated = true;
    }
    for (size_t k = 0; k < kept; ++k) {
        out.pixels.insert(out.pixels.end(), images[k].values.begin(), images[k].values.end());
        out.grids.push_back({images[k].frames, images[k].rows, images[k].columns});
    }
    return out;
}

} // namespace parallax

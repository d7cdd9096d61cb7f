#include "core/conversations/ConversationDatasetSummary.h"

#include "core/conversations/ConversationSetup.h"
#include "core/spec/Choice.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>

namespace parallax {

namespace {

constexpr int32_t kIgnore = -100;
constexpr size_t kNamedSamples = 3; // samples named in a line; the rest are counted

// The sample's tokens as runs of one kind: trained or not, image tokens or text.
std::vector<ConversationDatasetSummary::Span> previewSpans(const Tokenizer& tokenizer, const EncodedConversation& e) {
    const int32_t imagePad = tokenizer.tokenId("<|image_pad|>").value_or(-1);
    std::vector<ConversationDatasetSummary::Span> spans;
    size_t i = 0;
    while (i < e.ids.size()) {
        const bool trained = e.labels[i] != kIgnore, image = e.ids[i] == imagePad;
        size_t end = i;
        while (end < e.ids.size() && (e.labels[end] != kIgnore) == trained && (e.ids[end] == imagePad) == image) ++end;
        const std::string text = image ? "<|image_pad|> × " + std::to_string(end - i)
                                       : tokenizer.decode(std::vector<int32_t>(e.ids.begin() + static_cast<long>(i),
                                                                               e.ids.begin() + static_cast<long>(end)));
        if (!spans.empty() && spans.back().trained == trained) spans.back().text += text;
        else spans.push_back({text, trained});
        i = end;
    }
    return spans;
}

int64_t visualTokensOf(const EncodedConversation& e, int64_t merge) {
    int64_t n = 0;
    for (const auto& g : e.grids) n += g[0] * g[1] * g[2];
    return merge > 0 ? n / (merge * merge) : n;
}

std::string fileLine(const std::string& source) {
    // "/data/chats.jsonl:3" -> "chats.jsonl:3"; "/data/chats.json: sample 2" -> "chats.json: sample 2"
    const size_t slash = source.find_last_of('/', source.find(':'));
    return slash == std::string::npos ? source : source.substr(slash + 1);
}

std::string named(const std::vector<std::string>& sources) {
    std::string out;
    for (size_t i = 0; i < sources.size() && i < kNamedSamples; ++i) out += (i ? ", " : "") + fileLine(sources[i]);
    if (sources.size() > kNamedSamples) out += ", and " + std::to_string(sources.size() - kNamedSamples) + " more";
    return out;
}

std::string minMedianMax(const std::vector<int64_t>& sorted) {
    return std::to_string(sorted.front()) + " / " + std::to_string(sorted[(sorted.size() - 1) / 2]) + " / " +
           std::to_string(sorted.back());
}

std::string plural(size_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

} // namespace

std::string ConversationDatasetSummary::refusal(const DataSpec& data) const {
    if (!ok()) return {};
    if (!noVision.empty())
        return plural(noVision.size(), "sample has", "samples have") + " images, which this model cannot read (" +
               named(noVision) + "): use qwen2_5_vl, or a dataset without images";
    if (!tooLong.empty() && data.on_truncate != OnTruncate::Drop)
        return plural(tooLong.size(), "sample", "samples") + " would be cut inside an image by model.seq_len (" +
               named(tooLong) + "): raise model.seq_len, lower data.max_pixels, or set data.on_truncate = \"drop\"";
    if (!badImages.empty() && data.on_bad_sample != OnBadSample::Skip)
        return plural(badImages.size(), "sample has", "samples have") + " an image that cannot be read (" +
               named(badImages) + "): fix the image, or set data.on_bad_sample = \"skip\"";
    if (kept == 0) return "no sample is left to train on";
    return {};
}

ConversationDatasetSummary summarizeConversations(const DataSpec& data, const ModelDims& dims,
                                                  const std::string& tokenizerSource) {
    ConversationDatasetSummary out;
    try {
        const Tokenizer tokenizer = conversationTokenizer(tokenizerSource, dims);
        const ConversationEncoder encoder(tokenizer, conversationLimits(data, dims));
        const std::vector<Conversation> samples = readConversations(data.path);
        out.samples = static_cast<int64_t>(samples.size());
        for (const Conversation& c : samples) {
            EncodedConversation e;
            try {
                e = encoder.encode(c, /*pixels=*/false);
            } catch (const BadConversation& bad) {
                (bad.reason == BadConversation::Reason::TooLong ? out.tooLong
                 : bad.reason == BadConversation::Reason::Image ? out.badImages
                                                                : out.noVision)
                    .push_back(c.source);
                continue;
            }
            ++out.kept;
            out.imagesPerSample[static_cast<int64_t>(e.grids.size())] += 1;
            if (e.grids.empty()) ++out.textOnly;
            else out.visualTokens.push_back(visualTokensOf(e, dims.vision_merge));
            if (e.truncated) ++out.textCut;
            out.tokens.push_back(static_cast<int64_t>(e.ids.size()));
            if (out.preview.empty()) {
                out.preview = previewSpans(tokenizer, e);
                out.previewSource = c.source;
            }
        }
    } catch (const std::exception& e) { // ConversationError, TokenizerError naming the file
        ConversationDatasetSummary failed;
        failed.error = e.what();
        return failed;
    }
    std::sort(out.visualTokens.begin(), out.visualTokens.end());
    std::sort(out.tokens.begin(), out.tokens.end());
    return out;
}

std::vector<std::string> conversationSummaryLines(const ConversationDatasetSummary& s, const DataSpec& data,
                                                  const ModelDims& dims) {
    if (!s.ok()) return {s.error};
    std::vector<std::string> lines;
    std::string first = plural(static_cast<size_t>(s.samples), "sample", "samples");
    if (s.kept != s.samples) first += ", " + std::to_string(s.kept) + " trained on";
    if (s.textOnly > 0) first += " (" + std::to_string(s.textOnly) + " text only)";
    if (!s.imagesPerSample.empty()) {
        first += "; images per sample:";
        for (const auto& [images, count] : s.imagesPerSample)
            first += " " + std::to_string(images) + " (" + std::to_string(count) + ")";
    }
    lines.push_back(first);
    std::string sizes;
    if (!s.visualTokens.empty())
        sizes = "visual tokens per sample " + minMedianMax(s.visualTokens) + " (min / median / max) at data.max_pixels = " +
                std::to_string(data.max_pixels) + "; ";
    if (!s.tokens.empty())
        sizes += "tokens per sample " + minMedianMax(s.tokens) + " of model.seq_len = " + std::to_string(dims.seq_len);
    if (!sizes.empty()) lines.push_back(sizes);
    if (s.textCut > 0)
        lines.push_back(plural(static_cast<size_t>(s.textCut), "sample's", "samples'") +
                        " text is cut at model.seq_len (the answers past it do not train)");
    if (!s.tooLong.empty() && data.on_truncate == OnTruncate::Drop)
        lines.push_back(plural(s.tooLong.size(), "sample", "samples") +
                        " dropped: model.seq_len would cut inside an image (" + named(s.tooLong) + ")");
    if (!s.badImages.empty() && data.on_bad_sample == OnBadSample::Skip)
        lines.push_back(plural(s.badImages.size(), "sample", "samples") + " skipped: an image cannot be read (" +
                        named(s.badImages) + ")");
    const std::string refusal = s.refusal(data);
    if (!refusal.empty()) lines.push_back("the run refuses to start: " + refusal);
    return lines;
}

} // namespace parallax

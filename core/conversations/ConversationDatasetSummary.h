#pragma once

#include "core/spec/ModelDims.h"
#include "core/spec/RunSpec.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace parallax {

// What the console shows of a conversations dataset before a run reads it (New run): how many
// samples, how many images they carry, the visual tokens each takes at data.max_pixels, the samples
// a cut at model.seq_len would drop, and one sample as the model sees it, with the spans that train
// (the assistant answers) marked. Read as the worker's dataset reads it: the same tokenizer checks,
// limits and encoder, images by their headers only.
struct ConversationDatasetSummary {
    struct Span {
        std::string text;      // decoded; a run of image tokens reads "<|image_pad|> × 64"
        bool trained = false;  // labels: the model learns to predict these tokens
    };

    int64_t samples = 0;        // in the file(s)
    int64_t kept = 0;           // that a run trains on
    int64_t textOnly = 0;       // kept samples without an image
    int64_t textCut = 0;        // kept samples whose text is cut at model.seq_len
    std::map<int64_t, int64_t> imagesPerSample;  // images -> kept samples with that many
    std::vector<int64_t> visualTokens;           // per kept sample with images, ascending
    std::vector<int64_t> tokens;                 // per kept sample (visual tokens included), ascending
    std::vector<std::string> tooLong;            // a cut inside an image: dropped, or refused (on_truncate)
    std::vector<std::string> badImages;          // an image that cannot be read: skipped, or refused
    std::vector<std::string> noVision;           // an image for a model without a vision tower
    std::vector<Span> preview;                   // the first kept sample
    std::string previewSource;                   // its "FILE:LINE"
    // The dataset's or the tokenizer's problem (nothing else is set then).
    std::string error;

    bool ok() const { return error.empty(); }
    // Why a run of this spec would refuse to start (samples `data` does not let it leave out, or
    // none left), with the fix; "" when it would not.
    std::string refusal(const DataSpec& data) const;
};

// Reads data.path with model.from's tokenizer for a model of `dims` (resolveModel of the spec).
// Takes as long as reading every image's header and tokenizing every sample: call it off a GUI
// thread. Never throws.
ConversationDatasetSummary summarizeConversations(const DataSpec& data, const ModelDims& dims,
                                                  const std::string& tokenizer);

// Lines for the New run page: "4 samples (1 text only); images per sample: 1 (2), 2 (1)",
// "visual tokens per sample 20 / 42 / 96 (min / median / max) at data.max_pixels = 50176; tokens per
// sample 31 / 70 / 128", "2 samples dropped: longer than model.seq_len = 160 inside an image (chats.jsonl:3,
// chats.jsonl:7)".
std::vector<std::string> conversationSummaryLines(const ConversationDatasetSummary& summary, const DataSpec& data,
                                                  const ModelDims& dims);

} // namespace parallax

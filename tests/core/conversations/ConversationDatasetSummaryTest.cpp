// What New run shows of a conversations dataset: counts, images and visual tokens per sample at
// data.max_pixels, samples a cut at model.seq_len drops or refuses, and the first sample as the
// model reads it, with Qwen's real tokenizer.json (the text_oracle fixture) and PNG images drawn here.

#include "core/conversations/ConversationDatasetSummary.h"
#include "core/spec/SpecIO.h"
#include "tests/support/QwenFinetuneData.h"

#include <gtest/gtest.h>

#include <fstream>

namespace parallax {
namespace {

using testing::TempDir;

struct Dataset {
    TempDir dir;
    std::string jsonl = testing::writeQwenConversations(dir.path());
};

RunSpec qwenSpec(const std::string& data, int64_t seqLen, const std::string& extraData = "") {
    return parseSpec("[model]\nkind = \"qwen2_5_vl\"\npreset = \"tiny\"\nseq_len = " + std::to_string(seqLen) +
                     "\n[data]\nkind = \"conversations\"\npath = \"" + data + "\"\nmax_pixels = 50176\n" + extraData);
}

std::string tokenizer() { return testing::buildDir() + "/npm-oracle/qwen/tokenizer.json"; }

TEST(ConversationDatasetSummary, CountsImagesVisualTokensAndMarksTheAnswers) {
    Dataset d;
    const RunSpec spec = qwenSpec(d.jsonl, 512);
    const ConversationDatasetSummary s = summarizeConversations(spec.data, resolveModel(spec), tokenizer());
    ASSERT_TRUE(s.ok()) << s.error;
    EXPECT_EQ(s.samples, 6);
    EXPECT_EQ(s.kept, 6);
    EXPECT_EQ(s.textOnly, 2);
    EXPECT_EQ(s.imagesPerSample, (std::map<int64_t, int64_t>{{0, 2}, {1, 3}, {2, 1}}));
    // wide.png: 200 x 145 -> 196 x 140 -> 14 x 10 patches -> 7 x 5 = 35 tokens; tall.png: 60 x 250 ->
    // 56 x 252 (within 50176) -> 4 x 18 patches -> 2 x 9 = 18 tokens; square.png: 100 x 100 -> 112 x 112
    // -> 8 x 8 patches -> 16 tokens. The two-image sample: 35 + 18.
    EXPECT_EQ(s.visualTokens, (std::vector<int64_t>{16, 18, 35, 53}));
    EXPECT_TRUE(s.tooLong.empty());
    ASSERT_FALSE(s.preview.empty());
    EXPECT_EQ(s.previewSource, d.jsonl + ":1");
    std::string trained, whole;
    for (const auto& span : s.preview) {
        whole += span.text;
        if (span.trained) trained += span.text;
    }
    EXPECT_NE(whole.find("<|image_pad|> × 35"), std::string::npos) << whole;
    EXPECT_NE(whole.find("<|im_start|>user\n<|vision_start|>"), std::string::npos) << whole;
    // Only the answer (and the end of its turn) trains.
    EXPECT_EQ(trained, "Colour ramps.<|im_end|>") << whole;

    const std::vector<std::string> lines = conversationSummaryLines(s, spec.data, resolveModel(spec));
    ASSERT_GE(lines.size(), 2u);
    EXPECT_EQ(lines[0], "6 samples (2 text only); images per sample: 0 (2) 1 (3) 2 (1)");
    EXPECT_NE(lines[1].find("visual tokens per sample 16 / 18 / 53 (min / median / max) at data.max_pixels = 50176"),
              std::string::npos)
        << lines[1];
    EXPECT_EQ(s.refusal(spec.data), "");
}

TEST(ConversationDatasetSummary, NamesTheSamplesASequenceCutDropsOrRefuses) {
    Dataset d;
    // 58 tokens (the template's system prompt takes the first 10): the two-image sample's second image
    // starts before the cut and ends after it; the first sample's image fits, and its text is cut.
    RunSpec spec = qwenSpec(d.jsonl, 58);
    const ConversationDatasetSummary s = summarizeConversations(spec.data, resolveModel(spec), tokenizer());
    ASSERT_TRUE(s.ok()) << s.error;
    ASSERT_EQ(s.tooLong.size(), 1u);
    EXPECT_EQ(s.tooLong[0], d.jsonl + ":3");
    EXPECT_EQ(s.kept, 5);
    EXPECT_EQ(s.textCut, 1);
    const std::vector<std::string> lines = conversationSummaryLines(s, spec.data, resolveModel(spec));
    EXPECT_EQ(lines.back(), "1 sample dropped: model.seq_len would cut inside an image (chats.jsonl:3)");
    EXPECT_EQ(s.refusal(spec.data), "");

    spec = qwenSpec(d.jsonl, 58, "on_truncate = \"fail\"\n");
    EXPECT_EQ(s.refusal(spec.data), "1 sample would be cut inside an image by model.seq_len (chats.jsonl:3): raise "
                                    "model.seq_len, lower data.max_pixels, or set data.on_truncate = \"drop\"");
}

TEST(ConversationDatasetSummary, SaysWhatIsWrongWithTheTokenizerOrTheFile) {
    Dataset d;
    const RunSpec spec = qwenSpec(d.jsonl, 512);
    EXPECT_EQ(summarizeConversations(spec.data, resolveModel(spec), "").error,
              "data.kind = \"conversations\" tokenizes with the model's tokenizer.json: set model.from to a Hugging "
              "Face folder that holds one");
    const RunSpec missing = qwenSpec(d.dir.path() + "/none.jsonl", 512);
    EXPECT_NE(summarizeConversations(missing.data, resolveModel(missing), tokenizer()).error.find(d.dir.path() + "/none.jsonl"),
              std::string::npos);
}

} // namespace
} // namespace parallax

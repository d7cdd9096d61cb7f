// Qwen's real tokenizer.json and the Qwen2Tokenizer files written from it (vocab.json, merges.txt,
// tokenizer_config.json, the form Qwen-Image's tokenizer/ ships in) give the same tokenizer: the
// same pre-tokenizer pattern, added tokens, ids and decoded text on the corpus of make_corpus.py and
// on a chat. Both files come from the text_oracle fixture (install_oracle.sh).
#include "core/text/QwenChat.h"
#include "core/text/Tokenizer.h"
#include "core/text/TokenizerFiles.h"
#include "core/util/Files.h"
#include "tests/core/text/AddedTokensCompare.h"
#include "tests/core/text/Qwen2TokenizerFolder.h"
#include "tests/support/Process.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

using namespace parallax;
using namespace parallax::testing;

namespace {

std::string qwenJson() { return buildDir() + "/npm-oracle/qwen/tokenizer.json"; }
std::string corpusFile() { return buildDir() + "/npm-oracle/corpus.txt"; }

class QwenTokenizerFiles : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        ASSERT_TRUE(pathExists(qwenJson())) << qwenJson() << " is missing: the text_oracle fixture (install_oracle.sh) "
                                            << "installs it";
        s_json = new nlohmann::json(nlohmann::json::parse(readFile(qwenJson())));
        s_dir = new TempDir();
        writeQwen2TokenizerFolder(*s_json, joinPath(s_dir->path(), "tokenizer"));
        s_fromJson = new Tokenizer(Tokenizer::load(qwenJson()));
        s_fromFiles = new Tokenizer(Tokenizer::load(joinPath(s_dir->path(), "tokenizer")));
    }
    static void TearDownTestSuite() {
        delete s_fromFiles;
        delete s_fromJson;
        delete s_dir;
        delete s_json;
    }
    static nlohmann::json* s_json;
    static TempDir* s_dir;
    static Tokenizer* s_fromJson;
    static Tokenizer* s_fromFiles;
};
nlohmann::json* QwenTokenizerFiles::s_json = nullptr;
TempDir* QwenTokenizerFiles::s_dir = nullptr;
Tokenizer* QwenTokenizerFiles::s_fromJson = nullptr;
Tokenizer* QwenTokenizerFiles::s_fromFiles = nullptr;

TEST_F(QwenTokenizerFiles, SplitPatternIsTheOneOfQwensTokenizerJson) {
    const nlohmann::json& steps = (*s_json)["pre_tokenizer"]["pretokenizers"];
    const auto text = [](const nlohmann::json& j) { return j.get<std::string>(); };
    ASSERT_EQ(steps.size(), 2u);
    EXPECT_EQ(text(steps[0]["type"]), "Split");
    EXPECT_EQ(text(steps[0]["behavior"]), "Isolated");
    EXPECT_FALSE(steps[0]["invert"].get<bool>());
    EXPECT_EQ(text(steps[0]["pattern"]["Regex"]), std::string(kQwen2SplitPattern));
    EXPECT_EQ(text(steps[1]["type"]), "ByteLevel");
    EXPECT_FALSE(steps[1]["add_prefix_space"].get<bool>());
    EXPECT_FALSE(steps[1]["use_regex"].get<bool>());
    EXPECT_EQ(text((*s_json)["normalizer"]["type"]), "NFC");
    EXPECT_EQ(text((*s_json)["decoder"]["type"]), "ByteLevel");
}

TEST_F(QwenTokenizerFiles, SameVocabularyAndAddedTokens) {
    const Tokenizer &a = *s_fromFiles, &b = *s_fromJson;
    EXPECT_EQ(a.source(), joinPath(s_dir->path(), "tokenizer") + " (vocab.json, merges.txt)");
    EXPECT_FALSE(pathExists(joinPath(s_dir->path(), "tokenizer/tokenizer.json")));
    EXPECT_EQ(a.vocabularySize(), b.vocabularySize());
    EXPECT_EQ(a.vocabularySize(), 151643u);
    EXPECT_EQ(a.mergeCount(), b.mergeCount());
    EXPECT_EQ(a.idCount(), b.idCount());
    expectSameAddedTokens(a, b);
    EXPECT_EQ(a.tokenId("<|im_start|>"), 151644);
    EXPECT_EQ(a.tokenId("<|image_pad|>"), 151655);
}

// Every line of the corpus (multilingual text, code, digits, whitespace runs, contractions in any
// case, invalid UTF-8, NFD text, the chat's special tokens): the same ids, and the same text back.
TEST_F(QwenTokenizerFiles, SameIdsAndTextOnTheCorpus) {
    const std::string text = readFile(corpusFile());
    size_t lines = 0, differing = 0, start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos)
            end = text.size();
        const std::string line = text.substr(start, end - start);
        start = end + 1;
        ++lines;
        const std::vector<int32_t> ids = s_fromFiles->encode(line);
        const bool same = ids == s_fromJson->encode(line) && s_fromFiles->decode(ids) == s_fromJson->decode(ids);
        if (!same && ++differing <= 5)
            ADD_FAILURE() << "line " << lines << " differs: " << line.substr(0, 160);
    }
    EXPECT_GT(lines, 10000u);
    EXPECT_EQ(differing, 0u) << differing << " of " << lines << " lines differ";
}

TEST_F(QwenTokenizerFiles, SameChatEncoding) {
    const std::vector<ChatMessage> conversation = {
        {"user", {ChatPart::image(4), ChatPart::textPart("What's in this picture? Don't guess; I'LL check.")}},
        ChatMessage::text("assistant", "A cat \xF0\x9F\x90\x88 on 3 red sofas,\r\n\n  def f(x):\n\treturn x**2"),
    };
    const ChatEncoding a = QwenChatTemplate(*s_fromFiles).encode(conversation);
    const ChatEncoding b = QwenChatTemplate(*s_fromJson).encode(conversation);
    EXPECT_EQ(a.text, b.text);
    EXPECT_EQ(a.ids, b.ids);
    EXPECT_EQ(a.assistant, b.assistant);
    EXPECT_EQ(s_fromFiles->decode(a.ids), a.text);
}

} // namespace

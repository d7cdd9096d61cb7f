// Qwen's real tokenizer.json, encoded by parallax-cli tokenize and by Hugging Face's tokenizers.js
// (installed from npm by install_oracle.sh, the text_oracle fixture), on the corpus of make_corpus.py.
#include "core/text/QwenChat.h"
#include "core/text/Tokenizer.h"
#include "core/text/UnicodeNormalizer.h"
#include "core/text/Utf8Repair.h"
#include "core/util/Files.h"
#include "tests/core/text/LabelledRuns.h"
#include "tests/core/text/RedirectedProcess.h"
#include "tests/support/Process.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

using namespace parallax;
using namespace parallax::testing;

namespace {

std::string oracleDir() { return buildDir() + "/npm-oracle"; }
std::string qwenJson() { return oracleDir() + "/qwen/tokenizer.json"; }
std::string corpusFile() { return oracleDir() + "/corpus.txt"; }
std::string cli() { return buildDir() + "/app/parallax-cli"; }
std::string oracleScript() { return sourceDir() + "/tests/core/text/oracle_tokenize.mjs"; }

std::vector<std::string> linesOf(const std::string& text) {
    std::vector<std::string> lines;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos)
            end = text.size();
        lines.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return lines;
}

std::string escaped(const std::string& s) {
    std::ostringstream out;
    for (const char c : s.substr(0, 160)) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7F || u >= 0x80) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02X", u);
            out << buf;
        } else {
            out << c;
        }
    }
    return out.str();
}

// Standard output of `argv` run on `input`; fails the test (with standard error) when it fails.
std::string run(const std::vector<std::string>& argv, const std::string& input, const TempDir& dir) {
    const std::string out = dir.path() + "/out", err = dir.path() + "/err";
    const int code = runRedirected(argv, input, out, err);
    EXPECT_EQ(code, 0) << argv[0] << " failed: " << readFile(err);
    return readFile(out);
}

std::vector<std::string> oracle(const std::string& tokenizerJson, const std::string& input, const TempDir& dir) {
    return linesOf(run({"node", oracleScript(), oracleDir(), tokenizerJson}, input, dir));
}

// The lines where `ours` and `theirs` differ, the first few shown with their input.
void expectSameIds(const std::vector<std::string>& input, const std::vector<std::string>& ours,
                   const std::vector<std::string>& theirs, const char* what) {
    ASSERT_EQ(ours.size(), input.size()) << what;
    ASSERT_EQ(theirs.size(), input.size()) << what;
    size_t differing = 0;
    for (size_t i = 0; i < input.size(); ++i) {
        if (ours[i] == theirs[i])
            continue;
        if (++differing <= 5)
            ADD_FAILURE() << what << ", line " << i + 1 << ": " << escaped(input[i]) << "\n  parallax: " << ours[i]
                          << "\n  oracle:   " << theirs[i];
    }
    EXPECT_EQ(differing, 0u) << what << ": " << differing << " of " << input.size() << " lines differ";
}

class QwenOracle : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        ASSERT_TRUE(pathExists(qwenJson())) << qwenJson() << " is missing: the text_oracle fixture (install_oracle.sh) "
                                            << "installs it";
        s_corpus = new std::vector<std::string>(linesOf(readFile(corpusFile())));
        s_tokenizer = new Tokenizer(Tokenizer::load(qwenJson()));
    }
    static void TearDownTestSuite() {
        delete s_corpus;
        delete s_tokenizer;
    }
    static std::vector<std::string>* s_corpus;
    static Tokenizer* s_tokenizer;
    TempDir m_dir;
};
std::vector<std::string>* QwenOracle::s_corpus = nullptr;
Tokenizer* QwenOracle::s_tokenizer = nullptr;

TEST_F(QwenOracle, IsQwensVocabulary) {
    const Tokenizer& tok = *s_tokenizer;
    EXPECT_EQ(tok.vocabularySize(), 151643u);
    EXPECT_EQ(tok.tokenId("<|endoftext|>"), 151643);
    EXPECT_EQ(tok.tokenId("<|im_start|>"), 151644);
    EXPECT_EQ(tok.tokenId("<|im_end|>"), 151645);
    EXPECT_EQ(tok.tokenId("<|vision_start|>"), 151652);
    EXPECT_EQ(tok.tokenId("<|image_pad|>"), 151655);
    EXPECT_EQ(tok.tokenId("<|video_pad|>"), 151656);
    EXPECT_GT(tok.mergeCount(), 150000u);
}

// The corpus holds what it claims to: otherwise equal ids would prove little.
TEST_F(QwenOracle, CorpusCoversTheHardCases) {
    const std::vector<std::string>& corpus = *s_corpus;
    EXPECT_GE(corpus.size(), 10000u);
    const auto count = [&](auto&& pred) { return std::count_if(corpus.begin(), corpus.end(), pred); };
    const auto has = [](const char* s) { return [s](const std::string& l) { return l.find(s) != std::string::npos; }; };
    EXPECT_GT(count([](const std::string& l) { return !isValidUtf8(l); }), 300);
    EXPECT_GT(count(has("\r")), 300);
    EXPECT_GT(count(has("<|im_start|>")), 100);
    EXPECT_GT(count(has("<|image_pad|>")), 50);
    EXPECT_GT(count(has("\xE2\x80\x8D")), 100) << "ZWJ sequences";
    EXPECT_GT(count(has("\xF0\x9F\x87")), 50) << "flags";
    EXPECT_GT(count(has("'LL")), 20);
    EXPECT_GT(count(has("'Re")), 20);
    EXPECT_GT(count(has("\xE3\x80\x80")), 50) << "ideographic space";
    EXPECT_GT(count([](const std::string& l) { return l.size() > 2000; }), 50) << "long words";
    const UnicodeNormalizer nfc({UnicodeNormalizer::Form::NFC});
    EXPECT_GT(count([&](const std::string& l) { return isValidUtf8(l) && nfc.normalized(l) != l; }), 500) << "NFD text";
}

TEST_F(QwenOracle, CliIdsEqualTheOracleOnTheWholeCorpus) {
    const std::vector<std::string> ours = linesOf(run({cli(), "tokenize", qwenJson()}, corpusFile(), m_dir));
    const std::vector<std::string> theirs = oracle(qwenJson(), corpusFile(), m_dir);
    expectSameIds(*s_corpus, ours, theirs, "Qwen tokenizer.json");
}

// decode(encode(x)) is x normalized (NFC) for valid UTF-8, and x repaired then normalized otherwise:
// through the CLI both ways.
TEST_F(QwenOracle, DecodeOfEncodeIsTheNormalizedText) {
    const std::string ids = m_dir.path() + "/ids";
    writeFileAtomic(ids, run({cli(), "tokenize", qwenJson()}, corpusFile(), m_dir));
    const std::vector<std::string> decoded = linesOf(run({cli(), "tokenize", "--decode", qwenJson()}, ids, m_dir));
    const std::vector<std::string>& corpus = *s_corpus;
    ASSERT_EQ(decoded.size(), corpus.size());
    const UnicodeNormalizer nfc({UnicodeNormalizer::Form::NFC});
    size_t differing = 0, unchanged = 0, checkedAgainstNfc = 0;
    for (size_t i = 0; i < corpus.size(); ++i) {
        const std::string& x = corpus[i];
        const bool valid = isValidUtf8(x);
        const bool added = std::any_of(s_tokenizer->addedTokens().begin(), s_tokenizer->addedTokens().end(),
                                       [&](const AddedToken& t) { return x.find(t.content) != std::string::npos; });
        // Added tokens are matched before normalization: a combining mark after one stays apart.
        const std::string expected = added ? s_tokenizer->prepare(x) : nfc.normalized(valid ? x : repairUtf8(x));
        checkedAgainstNfc += !added;
        unchanged += valid && decoded[i] == x;
        if (decoded[i] != expected && ++differing <= 5)
            ADD_FAILURE() << "line " << i + 1 << ": " << escaped(x) << "\n  decoded:  " << escaped(decoded[i])
                          << "\n  expected: " << escaped(expected);
    }
    EXPECT_EQ(differing, 0u);
    EXPECT_GT(checkedAgainstNfc, 9000u);
    EXPECT_GT(unchanged, 9000u);
}

// Qwen2.5's files write merges as "a b" strings, Qwen3's (this one) as ["a", "b"] pairs.
TEST_F(QwenOracle, MergesAsStringsGiveTheSameIds) {
    nlohmann::json j = nlohmann::json::parse(readFile(qwenJson()));
    ASSERT_TRUE(j["model"]["merges"][0].is_array());
    for (auto& m : j["model"]["merges"])
        m = m[0].get<std::string>() + " " + m[1].get<std::string>();
    const Tokenizer strings = Tokenizer::fromJson(j.dump(), "strings/tokenizer.json");
    size_t differing = 0;
    for (const std::string& line : *s_corpus)
        differing += strings.encode(line) != s_tokenizer->encode(line);
    EXPECT_EQ(differing, 0u);
}

// GPT-2's own pre-tokenizer (ByteLevel with its regex and a space before each piece) and no
// normalizer, on the same vocabulary. tokenizers.js runs that regex with JavaScript's \s, which
// takes U+FEFF and not U+0085 (Oniguruma's and Parallax's \s are Unicode White_Space): lines
// with those two are left out.
TEST_F(QwenOracle, Gpt2StylePreTokenizerEqualsTheOracle) {
    nlohmann::json j = nlohmann::json::parse(readFile(qwenJson()));
    j["normalizer"] = nullptr;
    j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
    const std::string file = m_dir.path() + "/tokenizer.json";
    writeFileAtomic(file, j.dump());
    std::vector<std::string> lines;
    std::string input;
    for (const std::string& line : *s_corpus) {
        const std::string text = isValidUtf8(line) ? line : repairUtf8(line);
        if (text.find("\xEF\xBB\xBF") != std::string::npos || text.find("\xC2\x85") != std::string::npos)
            continue;
        lines.push_back(line);
        input += line + "\n";
    }
    ASSERT_GT(lines.size(), 10000u);
    const std::string inputFile = m_dir.path() + "/input";
    writeFileAtomic(inputFile, input);
    const Tokenizer gpt2 = Tokenizer::load(file);
    std::vector<std::string> ours;
    for (const std::string& line : lines) {
        std::string ids;
        for (const int32_t id : gpt2.encode(line))
            ids += (ids.empty() ? "" : " ") + std::to_string(id);
        ours.push_back(ids);
    }
    expectSameIds(lines, ours, oracle(file, inputFile, m_dir), "GPT-2 style pre-tokenizer");
}

TEST_F(QwenOracle, ChatTemplateIdsEqualTheOracleOnItsText) {
    const QwenChatTemplate chat(*s_tokenizer);
    const std::vector<ChatMessage> conversation = {
        {"user", {ChatPart::image(6), ChatPart::textPart("What's in this picture?\n\nAnswer in one line.")}},
        ChatMessage::text("assistant", "A black cat on a red sofa."),
        {"user", {ChatPart::textPart("And this one?"), ChatPart::image(3)}},
        ChatMessage::text("assistant", "\n\nThe same cat, asleep \xF0\x9F\x98\xB4  ")};
    const ChatEncoding e = chat.encode(conversation);
    const std::string textFile = m_dir.path() + "/chat";
    writeFileAtomic(textFile, e.text);
    const std::string theirs = run({"node", oracleScript(), oracleDir(), qwenJson(), "--whole"}, textFile, m_dir);
    std::string ours;
    for (const int32_t id : e.ids)
        ours += (ours.empty() ? "" : " ") + std::to_string(id);
    EXPECT_EQ(ours + "\n", theirs);
    EXPECT_EQ(s_tokenizer->decode(e.ids), e.text);
    // "\n\n" that opens the second answer joins the header's line break in one token ("\n\n\n"),
    // which begins before the answer and is not labelled.
    EXPECT_EQ(labelledRuns(*s_tokenizer, e), (std::vector<std::string>{"A black cat on a red sofa.<|im_end|>",
                                              "The same cat, asleep \xF0\x9F\x98\xB4  <|im_end|>"}));
}

} // namespace

// The tokenizer's pipeline on small tokenizer.json files whose right answers follow from the rules of
// the Rust tokenizers (Qwen's real file is compared with tokenizers.js in QwenOracleTest).
#include "core/text/Tokenizer.h"
#include "core/text/TokenizerError.h"
#include "tests/core/text/TinyTokenizer.h"

#include <gtest/gtest.h>

#include <thread>

using namespace parallax;
using parallax::testing::byteLevel;
using parallax::testing::TinyTokenizer;
using Ids = std::vector<int32_t>;

namespace {

int32_t byteId(char c) { return static_cast<uint8_t>(c); }

// The lowest-ranked pair first, wherever it is: "abc" with (b c) before (a b) is a|bc, then abc.
TEST(Tokenizer, MergesByRankNotByPosition) {
    TinyTokenizer t;
    t.merges = {{"b", "c"}, {"a", "b"}, {"a", "bc"}};
    const Tokenizer tok = t.make();
    EXPECT_EQ(tok.encode("abc"), (Ids{t.idOfMerge(2)}));
    EXPECT_EQ(tok.encode("ab"), (Ids{t.idOfMerge(1)}));
    EXPECT_EQ(tok.encode("abd"), (Ids{t.idOfMerge(1), byteId('d')}));
    TinyTokenizer aa;
    aa.merges = {{"a", "a"}};
    EXPECT_EQ(aa.make().encode("aaa"), (Ids{aa.idOfMerge(0), byteId('a')})) << "the leftmost of equal ranks first";
}

TEST(Tokenizer, BothMergeShapesReadTheSame) {
    TinyTokenizer pairs;
    pairs.merges = {{" ", "t"}, {" t", "h"}, {" th", "e"}, {"e", "r"}};
    TinyTokenizer strings = pairs;
    strings.stringMerges = true;
    ASSERT_TRUE(strings.json()["model"]["merges"][0].is_string());
    ASSERT_TRUE(pairs.json()["model"]["merges"][0].is_array());
    const std::string text = "the other there, the end";
    EXPECT_EQ(pairs.make().encode(text), strings.make().encode(text));
    EXPECT_EQ(pairs.make().encode(" the"), (Ids{pairs.idOfMerge(2)}));
}

TEST(Tokenizer, DecodesWhatItEncodes) {
    TinyTokenizer t;
    t.merges = {{"h", "e"}, {"he", "l"}, {"\xE4", "\xB8"}};
    t.add("<|endoftext|>");
    const Tokenizer tok = t.make();
    for (const std::string text : {"hello world", "日本語 with <|endoftext|> inside", "tab\tcr\rnul", "😀👍🏽", ""})
        EXPECT_EQ(tok.decode(tok.encode(text)), text);
    EXPECT_EQ(tok.decode(tok.encode("e\xCC\x81")), "\xC3\xA9") << "NFC: e + combining acute is é";
    EXPECT_EQ(tok.decode({byteId('\xE4')}), "\xEF\xBF\xBD") << "half a character decodes to U+FFFD";
    EXPECT_EQ(tok.decode(tok.encode("a<|endoftext|>b"), true), "ab") << "special tokens skipped";
    try {
        tok.decode({5, 123456});
        FAIL() << "an id beyond the vocabulary decoded";
    } catch (const TokenizerError& e) {
        EXPECT_NE(std::string(e.what()).find("123456"), std::string::npos) << e.what();
    }
}

TEST(Tokenizer, InvalidUtf8BecomesReplacementCharacters) {
    TinyTokenizer t;
    const Tokenizer tok = t.make();
    EXPECT_EQ(tok.encode("a\xFF" "b"), tok.encode("a\xEF\xBF\xBD" "b"));
    EXPECT_EQ(tok.encode("\xE2\x82!"), tok.encode("\xEF\xBF\xBD!"));
    EXPECT_EQ(tok.decode(tok.encode("x\xC0\x80y")), "x\xEF\xBF\xBD\xEF\xBF\xBDy");
}

TEST(Tokenizer, AddedTokensAreFoundBeforeWords) {
    TinyTokenizer t;
    t.add("<|im_start|>").add("<|im_end|>").add("<think>", false);
    const Tokenizer tok = t.make();
    const int32_t start = t.idOfAdded(0), end = t.idOfAdded(1), think = t.idOfAdded(2);
    EXPECT_EQ(tok.encode("a<|im_start|>b"), (Ids{byteId('a'), start, byteId('b')}));
    EXPECT_EQ(tok.encode("<|im_start|><|im_end|><think>"), (Ids{start, end, think}));
    EXPECT_EQ(tok.encode("<|im_start|"), TinyTokenizer{}.make().encode("<|im_start|")) << "no match without the >";
    EXPECT_EQ(tok.tokenId("<|im_end|>"), end);
    EXPECT_EQ(tok.tokenId(byteLevel(" ")), byteId(' '));
    EXPECT_FALSE(tok.tokenId("<|nothing|>"));
}

// lstrip, rstrip, single_word and normalized, as the Rust tokenizers apply them.
TEST(Tokenizer, AddedTokenFlags) {
    TinyTokenizer t;
    t.add("<l>", true, {{"lstrip", true}}).add("<r>", true, {{"rstrip", true}}).add("mask", true, {{"single_word", true}});
    t.add("\xC3\xA9", false, {{"normalized", true}}).add("\xC3\xB1", false, {{"normalized", false}});
    const Tokenizer tok = t.make();
    const Tokenizer plain = TinyTokenizer{}.make();
    const auto join = [](Ids a, const Ids& b) { a.insert(a.end(), b.begin(), b.end()); return a; };
    const int32_t l = t.idOfAdded(0), r = t.idOfAdded(1), mask = t.idOfAdded(2), e = t.idOfAdded(3), n = t.idOfAdded(4);
    EXPECT_EQ(tok.encode("a \t <l>b"), (Ids{byteId('a'), l, byteId('b')})) << "lstrip takes the spaces before";
    EXPECT_EQ(tok.encode("a<r>  \n b"), (Ids{byteId('a'), r, byteId('b')})) << "rstrip takes the spaces after";
    EXPECT_EQ(tok.encode("the mask is"), join(join(plain.encode("the "), {mask}), plain.encode(" is")));
    EXPECT_EQ(tok.encode("themask"), plain.encode("themask")) << "single_word: a letter touches it";
    EXPECT_EQ(tok.encode("mask9"), plain.encode("mask9"));
    EXPECT_EQ(tok.encode("(mask)"), join(join(plain.encode("("), {mask}), plain.encode(")")));
    EXPECT_EQ(tok.encode("e\xCC\x81"), (Ids{e})) << "a normalized token matches after NFC";
    EXPECT_EQ(tok.encode("n\xCC\x83"), plain.encode("\xC3\xB1")) << "a token matched as given does not match NFD text";
    EXPECT_EQ(tok.encode("\xC3\xB1"), (Ids{n}));
}

TEST(Tokenizer, IgnoreMergesTakesWholeWords) {
    TinyTokenizer t;
    t.merges = {{"a", "b"}, {"c", "d"}, {"ab", "cd"}};
    nlohmann::json j = t.json();
    j["model"]["merges"].erase(2); // "abcd" stays in the vocabulary, unreachable by merges
    EXPECT_EQ(Tokenizer::fromJson(j.dump(), "t").encode("abcd"), (Ids{t.idOfMerge(0), t.idOfMerge(1)}));
    j["model"]["ignore_merges"] = true;
    EXPECT_EQ(Tokenizer::fromJson(j.dump(), "t").encode("abcd"), (Ids{t.idOfMerge(2)}));
}

TEST(Tokenizer, UnknownCharactersAndPrefixSpace) {
    TinyTokenizer t;
    nlohmann::json j = t.json();
    j["model"]["vocab"].erase(byteLevel("z"));
    j["model"]["vocab"]["<unk>"] = 1000;
    j["model"]["unk_token"] = "<unk>";
    EXPECT_EQ(Tokenizer::fromJson(j.dump(), "t").encode("azzb"), (Ids{byteId('a'), 1000, 1000, byteId('b')}));
    j["model"]["fuse_unk"] = true;
    EXPECT_EQ(Tokenizer::fromJson(j.dump(), "t").encode("azzb"), (Ids{byteId('a'), 1000, byteId('b')}));

    // GPT-2's own pre-tokenizer: ByteLevel with its regex and a space put before each piece.
    nlohmann::json gpt2 = t.json();
    gpt2["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
    const Tokenizer tok = Tokenizer::fromJson(gpt2.dump(), "gpt2");
    EXPECT_EQ(tok.encode("hi"), t.make().encode(" hi"));
    EXPECT_EQ(tok.encode(" hi"), t.make().encode(" hi"));
    std::vector<int32_t> ids;
    std::vector<uint32_t> starts;
    tok.encode("ab", ids, &starts);
    EXPECT_EQ(starts, (std::vector<uint32_t>{0, 0, 1})) << "the added space stands where the text begins";
}

TEST(Tokenizer, StartsAreByteOffsets) {
    TinyTokenizer t;
    t.merges = {{"a", "b"}};
    t.add("<s>");
    std::vector<int32_t> ids;
    std::vector<uint32_t> starts;
    t.make().encode("ab é<s>b", ids, &starts);
    EXPECT_EQ(ids.size(), starts.size());
    EXPECT_EQ(starts, (std::vector<uint32_t>{0, 2, 3, 4, 5, 8}));
}

TEST(Tokenizer, EncodesOnManyThreadsAtOnce) {
    TinyTokenizer t;
    t.merges = {{"t", "h"}, {"th", "e"}, {" ", "the"}, {"i", "n"}};
    const Tokenizer tok = t.make();
    std::vector<std::string> texts;
    for (int i = 0; i < 200; ++i)
        texts.push_back("the thing in the " + std::to_string(i * 7919) + " 日本 " + std::string(static_cast<size_t>(i % 7), 'x'));
    std::vector<Ids> expected;
    for (const auto& text : texts)
        expected.push_back(tok.encode(text));
    std::vector<int> mismatches(4, 0);
    std::vector<std::thread> threads;
    for (int w = 0; w < 4; ++w)
        threads.emplace_back([&, w] {
            for (int round = 0; round < 50; ++round)
                for (size_t i = 0; i < texts.size(); ++i)
                    mismatches[w] += tok.encode(texts[(i + w * 13) % texts.size()]) != expected[(i + w * 13) % texts.size()];
        });
    for (auto& th : threads)
        th.join();
    EXPECT_EQ(mismatches, (std::vector<int>{0, 0, 0, 0}));
}

} // namespace

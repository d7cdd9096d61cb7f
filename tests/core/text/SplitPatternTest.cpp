#include "core/text/SplitPattern.h"
#include "core/text/TokenizerError.h"
#include "tests/core/text/TinyTokenizer.h"

#include <gtest/gtest.h>

using namespace parallax;

namespace {

std::vector<std::string> pieces(const SplitPattern& p, const std::string& text) {
    std::vector<TextPiece> out;
    p.split(text, 0, out);
    std::vector<std::string> words;
    for (const TextPiece& piece : out)
        words.push_back(text.substr(piece.start, piece.end - piece.start));
    return words;
}

using Words = std::vector<std::string>;

TEST(SplitPattern, QwenPatternSplitsWords) {
    const SplitPattern qwen = SplitPattern::regex(parallax::testing::kQwenPattern, SplitPattern::Behavior::Isolated, false);
    EXPECT_EQ(pieces(qwen, "I'LL don't"), (Words{"I", "'LL", " don", "'t"}));
    EXPECT_EQ(pieces(qwen, "12345"), (Words{"1", "2", "3", "4", "5"}));
    EXPECT_EQ(pieces(qwen, "a  b"), (Words{"a", " ", " b"}));
    EXPECT_EQ(pieces(qwen, "x\r\n\r\ny"), (Words{"x", "\r\n\r\n", "y"}));
    EXPECT_EQ(pieces(qwen, "end.  "), (Words{"end", ".", "  "}));
    EXPECT_EQ(pieces(qwen, "a\xE3\x80\x80" "b"), (Words{"a", "\xE3\x80\x80" "b"})); // ideographic space joins the word
    EXPECT_EQ(pieces(qwen, "héllo wörld"), (Words{"héllo", " wörld"}));
}

// \s is Unicode White_Space, as in Oniguruma (and tokenizers.js): U+0085 is, U+180E and U+FEFF are not.
TEST(SplitPattern, WhitespaceIsUnicodeWhiteSpace) {
    const SplitPattern qwen = SplitPattern::regex(parallax::testing::kQwenPattern, SplitPattern::Behavior::Isolated, false);
    EXPECT_EQ(pieces(qwen, "!!\xC2\x85"), (Words{"!!", "\xC2\x85"}));
    EXPECT_EQ(pieces(qwen, "!!\xE1\xA0\x8E"), (Words{"!!\xE1\xA0\x8E"}));
    EXPECT_EQ(pieces(qwen, "!!\xEF\xBB\xBF"), (Words{"!!\xEF\xBB\xBF"}));
    EXPECT_EQ(oniguramaToPcre2(R"([^\s\p{L}]\s+\S\\s)"), R"([^\p{White_Space}\p{L}]\p{White_Space}+\P{White_Space}\\s)");
}

TEST(SplitPattern, RefusesWhatPcre2CannotExpress) {
    EXPECT_THROW(oniguramaToPcre2("[a-z&&[^aeiou]]"), TokenizerError);
    EXPECT_THROW(oniguramaToPcre2("[[abc]]"), TokenizerError);
    EXPECT_NO_THROW(oniguramaToPcre2("[[:alpha:]]"));
    try {
        SplitPattern::regex("(unclosed", SplitPattern::Behavior::Isolated, false);
        FAIL() << "an unclosed group compiled";
    } catch (const TokenizerError& e) {
        EXPECT_NE(std::string(e.what()).find("(unclosed"), std::string::npos) << e.what();
    }
}

// The behaviors as the Rust tokenizers define them, on "a-b--c" split at "-".
TEST(SplitPattern, Behaviors) {
    using B = SplitPattern::Behavior;
    const auto dash = [](B b) { return SplitPattern::literal("-", b, false); };
    EXPECT_EQ(pieces(dash(B::Removed), "a-b--c"), (Words{"a", "b", "c"}));
    EXPECT_EQ(pieces(dash(B::Isolated), "a-b--c"), (Words{"a", "-", "b", "-", "-", "c"}));
    EXPECT_EQ(pieces(dash(B::MergedWithPrevious), "a-b--c"), (Words{"a-", "b-", "-", "c"}));
    EXPECT_EQ(pieces(dash(B::MergedWithNext), "a-b--c"), (Words{"a", "-b", "-", "-c"}));
    EXPECT_EQ(pieces(dash(B::Contiguous), "a-b--c"), (Words{"a", "-", "b", "--", "c"}));
    EXPECT_EQ(pieces(SplitPattern::literal("-", B::Removed, true), "a-b--c"), (Words{"-", "-", "-"}));
    EXPECT_EQ(pieces(SplitPattern::literal("a.b", B::Isolated, false), "a.bxaxb"), (Words{"a.b", "xaxb"}));
}

TEST(SplitPattern, LongRunsNeitherFailNorStall) {
    const SplitPattern qwen = SplitPattern::regex(parallax::testing::kQwenPattern, SplitPattern::Behavior::Isolated, false);
    const std::string spaces(1000000, ' ');
    EXPECT_EQ(pieces(qwen, spaces), (Words{spaces}));
    EXPECT_EQ(pieces(qwen, spaces + "x"), (Words{spaces.substr(1), " x"}));
    const std::string letters(1000000, 'a');
    EXPECT_EQ(pieces(qwen, letters + "!"), (Words{letters, "!"}));
}

TEST(SplitPattern, EmptyMatchesMoveOn) {
    const SplitPattern maybe = SplitPattern::regex("x*", SplitPattern::Behavior::Isolated, false);
    EXPECT_EQ(pieces(maybe, "ab\xC3\xA9xxc"), (Words{"a", "b", "\xC3\xA9", "xx", "c"}));
}

} // namespace

#include "core/store/FtsQuery.h"

#include <gtest/gtest.h>

namespace parallax {
namespace {

TEST(FtsQuery, PlainWordsBecomeQuotedPhrases) {
    EXPECT_EQ(ftsQueryFromUserText("nccl timeout"), "\"nccl\" \"timeout\"");
    EXPECT_EQ(ftsQueryFromUserText("  loss=nan  "), "\"loss=nan\"");
    EXPECT_EQ(ftsQueryFromUserText("rank-3 a.b:c"), "\"rank-3\" \"a.b:c\"");
    EXPECT_EQ(ftsQueryFromUserText("and or not"), "\"and\" \"or\" \"not\"");
    EXPECT_FALSE(usesFtsSyntax("nccl timeout"));
}

TEST(FtsQuery, TrailingStarIsAPrefix) {
    EXPECT_EQ(ftsQueryFromUserText("nccl* err"), "\"nccl\"* \"err\"");
    EXPECT_EQ(ftsQueryFromUserText("*"), "");
}

TEST(FtsQuery, WordsWithoutLettersOrDigitsAreDropped) {
    EXPECT_EQ(ftsQueryFromUserText("-- memory ::"), "\"memory\"");
    EXPECT_EQ(ftsQueryFromUserText("   "), "");
    EXPECT_EQ(ftsQueryFromUserText(""), "");
    EXPECT_EQ(ftsQueryFromUserText("Überlauf"), "\"Überlauf\"");
}

TEST(FtsQuery, FtsSyntaxPassesThrough) {
    for (const std::string q : {"\"out of memory\"", "a OR b", "a AND b", "a NOT b",
                                "NEAR(nccl timeout, 5)", "(a OR b) c"}) {
        EXPECT_TRUE(usesFtsSyntax(q)) << q;
        EXPECT_EQ(ftsQueryFromUserText(q), q);
    }
}

} // namespace
} // namespace parallax

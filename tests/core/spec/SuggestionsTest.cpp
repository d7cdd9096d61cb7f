#include "core/spec/Suggestions.h"

#include <gtest/gtest.h>

namespace parallax {
namespace {

TEST(Suggestions, FindsSwappedAndMistypedLetters) {
    const std::vector<std::string> keys = {"steps", "global_batch", "micro_batch", "lr", "warmup", "seed"};
    EXPECT_EQ(closestMatch("stpes", keys), "steps");
    EXPECT_EQ(closestMatch("global_bach", keys), "global_batch");
    EXPECT_EQ(closestMatch("WARMUP", keys), "warmup");
    EXPECT_EQ(closestMatch("micro-batch", keys), "micro_batch");
}

TEST(Suggestions, StaysQuietForUnrelatedWords) {
    const std::vector<std::string> kinds = {"gpt", "qwen_image", "qwen2"};
    EXPECT_EQ(closestMatch("resnet", kinds), "");
    EXPECT_EQ(closestMatch("sched", {"seed", "steps"}), "");
    EXPECT_EQ(closestMatch("x", {"lr"}), "");
    EXPECT_EQ(closestMatch("anything", {}), "");
}

TEST(Suggestions, DidYouMeanQuotesValuesNotKeys) {
    EXPECT_EQ(didYouMean("1fb1", {"gpipe", "1f1b", "interleaved"}), "; did you mean \"1f1b\"?");
    EXPECT_EQ(didYouMean("stpes", {"steps"}, false), "; did you mean steps?");
    EXPECT_EQ(didYouMean("zzzzzz", {"steps"}), "");
}

TEST(Suggestions, JoinList) {
    EXPECT_EQ(joinList({}), "");
    EXPECT_EQ(joinList({"a"}), "a");
    EXPECT_EQ(joinList({"a", "b", "c"}), "a, b, c");
    EXPECT_EQ(joinList({"a", "b", "c"}, " or "), "a, b or c");
}

} // namespace
} // namespace parallax

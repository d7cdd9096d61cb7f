// The recent pace as medians: what a single fast, slow or paused step does to it.
#include "core/telemetry/StepWindow.h"

#include <gtest/gtest.h>

namespace parallax {
namespace {

StepEvent at(int64_t step, double t, double tokensPerS) {
    StepEvent e;
    e.step = step;
    e.t = t;
    e.tokens_per_s = tokensPerS;
    return e;
}

TEST(StepWindow, IsEmptyUntilAStepAndLeavesTheWarmUpOut) {
    StepWindow w(5);
    EXPECT_FALSE(w.tokensPerSecond());
    EXPECT_FALSE(w.secondsPerStep());
    w.add(at(0, 10, 50));
    EXPECT_EQ(w.tokensPerSecond(), 50.0) << "the first step alone is all there is";
    EXPECT_FALSE(w.secondsPerStep());
    w.add(at(1, 11, 800));
    EXPECT_EQ(w.tokensPerSecond(), 800.0) << "step 0's warm-up is left out once later steps are there";
    EXPECT_EQ(w.secondsPerStep(), 1.0);
}

TEST(StepWindow, OneOddStepMovesNeitherFigure) {
    StepWindow w(20);
    double t = 0;
    for (int64_t s = 0; s < 20; ++s) w.add(at(s, t += 0.5, 800));
    w.add(at(20, t += 40, 5800)); // the step after a 40 s hang, fast once it runs
    EXPECT_EQ(w.tokensPerSecond(), 800.0);
    EXPECT_EQ(w.secondsPerStep(), 0.5);
    EXPECT_EQ(w.steps().size(), 20u) << "the oldest step leaves";
    EXPECT_EQ(w.last()->step, 20);
}

TEST(StepWindow, StepsOutOfOrderOrAgainAreIgnoredAndGapsInNumbersAreDivided) {
    StepWindow w(10);
    w.add(at(4, 10, 100));
    w.add(at(4, 11, 900));
    w.add(at(3, 12, 900));
    EXPECT_EQ(w.steps().size(), 1u);
    w.add(at(8, 14, 100)); // four steps in 4 s
    EXPECT_EQ(w.secondsPerStep(), 1.0);
    w.clear();
    EXPECT_TRUE(w.steps().empty());
}

} // namespace
} // namespace parallax

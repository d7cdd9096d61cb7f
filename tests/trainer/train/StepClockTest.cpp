#include "trainer/train/StepClock.h"

#include <gtest/gtest.h>

#include <numeric>
#include <thread>

using namespace parallax;

TEST(HostStepClock, LapsDivideTheStepAndScalarsComeBackInOrder) {
    HostStepClock clock;
    for (int step = 0; step < 2; ++step) {
        clock.begin();
        std::this_thread::sleep_for(std::chrono::milliseconds(4));
        clock.lap();
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        clock.lap();
        clock.end(torch::tensor({1.5 + step, 4.0}, torch::kDouble));
    }
    EXPECT_EQ(clock.unread(), 2u);
    for (int step = 0; step < 2; ++step) {
        const StepReading r = clock.read();
        ASSERT_EQ(r.lapMs.size(), 3u);
        EXPECT_GE(r.lapMs[0], 4.0);
        EXPECT_GE(r.lapMs[1], 2.0);
        EXPECT_GE(r.lapMs[2], 0.0);
        EXPECT_NEAR(std::accumulate(r.lapMs.begin(), r.lapMs.end(), 0.0), r.ms, 0.05);
        ASSERT_EQ(r.scalars.size(), 2u);
        EXPECT_DOUBLE_EQ(r.scalars[0], 1.5 + step);
        EXPECT_DOUBLE_EQ(r.scalars[1], 4.0);
    }
    EXPECT_EQ(clock.unread(), 0u);
    EXPECT_THROW(clock.read(), std::logic_error);
}

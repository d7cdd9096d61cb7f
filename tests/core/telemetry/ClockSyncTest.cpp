#include "core/telemetry/ClockSync.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace parallax;

namespace {

// A rank whose clock runs `skew` seconds behind the reference; the message takes `up` seconds to
// reach the reference and `down` seconds to come back; the reference takes `work` to reply.
ClockSample exchange(double refSendTime, double skew, double up, double down, double work) {
    ClockSample s;
    s.t0 = refSendTime - skew;
    s.t1 = refSendTime + up;
    s.t2 = s.t1 + work;
    s.t3 = s.t2 + down - skew;
    return s;
}

} // namespace

TEST(ClockSync, SymmetricExchangeGivesTheExactOffset) {
    const ClockSample s = exchange(1000.0, 0.25, 0.001, 0.001, 0.0005);
    EXPECT_NEAR(clockOffset(s), 0.25, 1e-9);
    EXPECT_NEAR(roundTripDelay(s), 0.002, 1e-9);
    EXPECT_NEAR(toReferenceClock(s.t3, clockOffset(s)), s.t2 + 0.001, 1e-9);
}

TEST(ClockSync, AsymmetricExchangeErrsByHalfTheDifference) {
    const ClockSample s = exchange(50.0, -3.0, 0.004, 0.0, 0.0);
    EXPECT_NEAR(clockOffset(s), -3.0 + 0.002, 1e-9);
    EXPECT_NEAR(roundTripDelay(s), 0.004, 1e-9);
}

TEST(ClockSync, EstimatePicksTheFastestRoundTrip) {
    std::vector<ClockSample> samples = {
        exchange(10.0, 1.5, 0.010, 0.001, 0.0),  // queued on the way up: biased
        exchange(11.0, 1.5, 0.0002, 0.0002, 0.0), // the clean one
        exchange(12.0, 1.5, 0.001, 0.020, 0.0),  // queued on the way back
    };
    const ClockEstimate e = estimateClockOffset(samples);
    EXPECT_EQ(e.samples, 3);
    EXPECT_NEAR(e.offset, 1.5, 1e-9);
    EXPECT_NEAR(e.delay, 0.0004, 1e-9);
}

TEST(ClockSync, EstimateIgnoresImpossibleSamples) {
    ClockSample negative = exchange(10.0, 0.0, 0.001, 0.001, 0.0);
    negative.t3 = negative.t0 - 1.0; // replies before asking
    ClockSample nan = exchange(10.0, 0.0, 0.001, 0.001, 0.0);
    nan.t1 = std::numeric_limits<double>::quiet_NaN();
    EXPECT_EQ(estimateClockOffset({negative, nan}).samples, 0);
    EXPECT_EQ(estimateClockOffset({}).offset, 0.0);
    const ClockEstimate e = estimateClockOffset({negative, exchange(5.0, 0.7, 0.001, 0.001, 0.0), nan});
    EXPECT_EQ(e.samples, 1);
    EXPECT_NEAR(e.offset, 0.7, 1e-9);
}

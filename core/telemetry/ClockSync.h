#pragma once

#include <vector>

namespace parallax {

// One ping-pong exchange between a rank (local clock) and rank 0 (reference clock):
// t0 local send, t1 reference receive, t2 reference reply, t3 local receive. Seconds.
struct ClockSample {
    double t0 = 0;
    double t1 = 0;
    double t2 = 0;
    double t3 = 0;
};

struct ClockEstimate {
    double offset = 0; // reference clock - local clock, seconds
    double delay = 0;  // round trip of the sample used, without the reference's processing time
    int samples = 0;   // valid samples considered
};

// NTP's estimate: reference - local = ((t1 - t0) + (t2 - t3)) / 2. Exact when both directions take
// equally long; the error is at most half the round trip.
double clockOffset(const ClockSample& s);
// (t3 - t0) - (t2 - t1): time on the wire both ways.
double roundTripDelay(const ClockSample& s);

// The offset of the sample with the smallest round trip, the one least disturbed by queueing.
// Samples with a negative delay or non-finite times are ignored; none left gives {0, 0, 0}.
ClockEstimate estimateClockOffset(const std::vector<ClockSample>& samples);

// A local timestamp in the reference clock, given offset = reference - local.
inline double toReferenceClock(double localTime, double offset) { return localTime + offset; }

} // namespace parallax

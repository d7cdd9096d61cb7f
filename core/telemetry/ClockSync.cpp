#include "core/telemetry/ClockSync.h"

#include <cmath>

namespace parallax {

double clockOffset(const ClockSample& s) { return ((s.t1 - s.t0) + (s.t2 - s.t3)) / 2.0; }

double roundTripDelay(const ClockSample& s) { return (s.t3 - s.t0) - (s.t2 - s.t1); }

ClockEstimate estimateClockOffset(const std::vector<ClockSample>& samples) {
    ClockEstimate best;
    for (const ClockSample& s : samples) {
        if (!std::isfinite(s.t0) || !std::isfinite(s.t1) || !std::isfinite(s.t2) || !std::isfinite(s.t3))
            continue;
        const double delay = roundTripDelay(s);
        if (delay < 0)
            continue;
        if (best.samples == 0 || delay < best.delay) {
            best.offset = clockOffset(s);
            best.delay = delay;
        }
        ++best.samples;
    }
    return best;
}

} // namespace parallax

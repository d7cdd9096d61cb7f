#pragma once

#include <cstddef>
#include <vector>

namespace parallax {

// What a curve is plotted against. Every MetricSeries keeps all three, so switching is free.
enum class MetricAxis {
    Step,   // the training step
    Time,   // seconds since the series' time origin (wall clock)
    Tokens, // cumulative tokens seen
};

// Which values of a series a curve draws.
enum class MetricChannel {
    Raw,
    Smoothed,
};

// Smoothing is computed on the full-fidelity series, before decimation, so a smoothed curve looks
// the same at every zoom level.
struct MetricSmoothing {
    enum class Kind {
        None,
        Ema,    // exponential moving average, debiased at the start (as TensorBoard draws it)
        Window, // mean of a centered window of `window` points (the last points use a shorter one)
    };
    Kind kind = Kind::None;
    double emaWeight = 0.9; // 0 <= w < 1: weight of the previous average
    int window = 21;        // points; an even number is rounded up to the next odd one

    // The smoothing of a "Smoothing %" control: an EMA of that weight (0 to 1), none at 0. Every
    // page's smoothing control maps its value through here.
    static MetricSmoothing ema(double weight) {
        MetricSmoothing s;
        s.kind = weight > 0 ? Kind::Ema : Kind::None;
        s.emaWeight = weight;
        return s;
    }

    bool operator==(const MetricSmoothing& o) const {
        return kind == o.kind && emaWeight == o.emaWeight && window == o.window;
    }
    bool operator!=(const MetricSmoothing& o) const { return !(*this == o); }
};

// The points a plot draws for a visible x range: about two per pixel column (the column's minimum
// and maximum at their own x, in series order), plus the nearest point outside each edge so that
// the line runs to the border.
struct DecimatedPoints {
    std::vector<double> x;
    std::vector<double> y;
    void clear() {
        x.clear();
        y.clear();
    }
    size_t size() const { return x.size(); }
};

} // namespace parallax

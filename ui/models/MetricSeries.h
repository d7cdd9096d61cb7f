#pragma once

#include "ui/models/MetricSeriesPyramid.h"
#include "ui/models/MetricSeriesTypes.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace parallax {

// One metric of one run at full fidelity: every point keeps its step, wall time and cumulative
// tokens (so the x axis can switch freely) and its value, plus a smoothed copy computed on the
// full series. Both channels keep min/max pyramids, so a visible range of any size reduces to
// about two points per pixel column in O(pixels * log n) without losing a spike.
//
// The x columns are kept non-decreasing (a sample earlier than its predecessor takes the
// predecessor's x), which lets ranges be found by binary search. Appends are amortized O(1).
class MetricSeries {
public:
    explicit MetricSeries(MetricSmoothing smoothing = {});

    void append(double step, double time, double tokens, double value);
    void reserve(size_t points);
    void clear();
    size_t size() const { return m_value.size(); }
    bool empty() const { return m_value.empty(); }

    // Wall time is shown relative to an origin: by default the first point's time.
    void setTimeOrigin(double seconds);
    double timeOrigin() const { return m_timeOrigin.value_or(0.0); }

    // Recomputes the smoothed channel over the whole series (O(n)).
    void setSmoothing(const MetricSmoothing& smoothing);
    const MetricSmoothing& smoothing() const { return m_smoothing; }

    double x(MetricAxis axis, size_t i) const { return column(axis)[i]; }
    double value(size_t i) const { return m_value[i]; }
    // The smoothed value; equal to value(i) when smoothing is off.
    double smoothed(size_t i) const;
    double at(MetricChannel channel, size_t i) const {
        return channel == MetricChannel::Raw ? value(i) : smoothed(i);
    }

    // [first, last) of the points whose x lies in [x0, x1].
    std::pair<size_t, size_t> indexRange(MetricAxis axis, double x0, double x1) const;
    // The first and last x; nullopt when empty.
    std::optional<std::pair<double, double>> xBounds(MetricAxis axis) const;
    // The point whose x is closest to `x`; nullopt when empty.
    std::optional<size_t> nearest(MetricAxis axis, double x) const;
    // Exact minimum and maximum of a channel over points [first, last).
    MetricSeriesPyramid::Extent extent(MetricChannel channel, size_t first, size_t last) const;

    // The points to draw for x in [x0, x1] on a plot `pixels` columns wide: each column's
    // minimum and maximum at their own x (one point when they coincide), in series order, plus
    // the nearest point beyond each edge. Replaces `out`'s contents.
    void decimate(MetricChannel channel, MetricAxis axis, double x0, double x1, int pixels,
                  DecimatedPoints& out) const;

    size_t memoryBytes() const;

private:
    const std::vector<double>& column(MetricAxis axis) const;
    void smoothAppended();  // extends the smoothed channel by the last appended point
    void rebuildSmoothed();
    size_t smoothedFinal() const; // points whose smoothed value can no longer change
    double windowMean(size_t i) const;
    int halfWindow() const { return m_smoothing.window / 2; }

    std::vector<double> m_step, m_time, m_tokens, m_value;
    std::optional<double> m_timeOrigin;
    MetricSeriesPyramid m_rawPyramid;

    MetricSmoothing m_smoothing;
    // Ema: every point's smoothed value. Window: the final ones only (the last half window is
    // computed on demand from the prefix sums, as later points still change it).
    std::vector<double> m_smoothed;
    std::vector<double> m_finiteSum;   // Window: prefix sums of the finite values
    std::vector<uint32_t> m_finiteCount;
    double m_emaLast = 0;
    double m_emaDebias = 1; // emaWeight^points
    MetricSeriesPyramid m_smoothedPyramid;
};

} // namespace parallax

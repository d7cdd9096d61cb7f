#include "ui/models/MetricSeries.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace parallax {

MetricSeries::MetricSeries(MetricSmoothing smoothing) { setSmoothing(smoothing); }

void MetricSeries::reserve(size_t points) {
    m_step.reserve(points);
    m_time.reserve(points);
    m_tokens.reserve(points);
    m_value.reserve(points);
    if (m_smoothing.kind != MetricSmoothing::Kind::None) m_smoothed.reserve(points);
    if (m_smoothing.kind == MetricSmoothing::Kind::Window) {
        m_finiteSum.reserve(points + 1);
        m_finiteCount.reserve(points + 1);
    }
}

void MetricSeries::clear() {
    m_step.clear();
    m_time.clear();
    m_tokens.clear();
    m_value.clear();
    m_timeOrigin.reset();
    m_rawPyramid.clear();
    rebuildSmoothed();
}

void MetricSeries::setTimeOrigin(double seconds) {
    if (m_timeOrigin && *m_timeOrigin == seconds) return;
    const double shift = timeOrigin() - seconds;
    m_timeOrigin = seconds;
    for (double& t : m_time) t += shift;
}

void MetricSeries::append(double step, double time, double tokens, double value) {
    if (!m_timeOrigin) m_timeOrigin = time;
    const double t = time - *m_timeOrigin;
    // Keep the columns sorted for binary search: a clock step back or a missing token count
    // (0) repeats the previous x rather than breaking the order.
    auto push = [](std::vector<double>& col, double x) {
        if (!col.empty() && !(x >= col.back())) x = col.back();
        col.push_back(x);
    };
    push(m_step, step);
    push(m_time, t);
    push(m_tokens, tokens);
    m_value.push_back(value);
    m_rawPyramid.extend(m_value.size(), [this](size_t i) { return m_value[i]; });
    smoothAppended();
}

void MetricSeries::setSmoothing(const MetricSmoothing& smoothing) {
    m_smoothing = smoothing;
    m_smoothing.emaWeight = std::clamp(m_smoothing.emaWeight, 0.0, 0.999999);
    m_smoothing.window = std::max(1, m_smoothing.window | 1);
    rebuildSmoothed();
}

void MetricSeries::rebuildSmoothed() {
    m_smoothed.clear();
    m_finiteSum.clear();
    m_finiteCount.clear();
    m_smoothedPyramid.clear();
    m_emaLast = 0;
    m_emaDebias = 1;
    if (m_smoothing.kind == MetricSmoothing::Kind::Window) {
        m_finiteSum.push_back(0);
        m_finiteCount.push_back(0);
    }
    const size_t n = m_value.size();
    if (m_smoothing.kind == MetricSmoothing::Kind::None) return;
    // Replays the appends one by one: the same code path, so a rebuilt series equals one grown
    // point by point.
    std::vector<double> values;
    values.swap(m_value);
    m_value.reserve(values.size());
    for (size_t i = 0; i < n; ++i) {
        m_value.push_back(values[i]);
        smoothAppended();
    }
}

void MetricSeries::smoothAppended() {
    const size_t n = m_value.size();
    const double y = m_value[n - 1];
    switch (m_smoothing.kind) {
    case MetricSmoothing::Kind::None:
        return;
    case MetricSmoothing::Kind::Ema: {
        // A non-finite value (a NaN loss) leaves the average as it was instead of poisoning
        // every later point; the raw curve still shows it.
        if (std::isfinite(y)) {
            const double w = m_smoothing.emaWeight;
            m_emaLast = m_emaLast * w + (1 - w) * y;
            m_emaDebias *= w;
        }
        const double debias = 1 - m_emaDebias;
        m_smoothed.push_back(debias > 0 ? m_emaLast / debias
                                        : std::numeric_limits<double>::quiet_NaN());
        m_smoothedPyramid.extend(m_smoothed.size(), [this](size_t i) { return m_smoothed[i]; });
        return;
    }
    case MetricSmoothing::Kind::Window: {
        const bool finite = std::isfinite(y);
        m_finiteSum.push_back(m_finiteSum.back() + (finite ? y : 0.0));
        m_finiteCount.push_back(m_finiteCount.back() + (finite ? 1u : 0u));
        const size_t final = smoothedFinal();
        while (m_smoothed.size() < final) m_smoothed.push_back(windowMean(m_smoothed.size()));
        m_smoothedPyramid.extend(m_smoothed.size(), [this](size_t i) { return m_smoothed[i]; });
        return;
    }
    }
}

size_t MetricSeries::smoothedFinal() const {
    const size_t n = m_value.size();
    if (m_smoothing.kind != MetricSmoothing::Kind::Window) return n;
    const size_t h = static_cast<size_t>(halfWindow());
    return n > h ? n - h : 0;
}

double MetricSeries::windowMean(size_t i) const {
    const size_t h = static_cast<size_t>(halfWindow());
    const size_t lo = i > h ? i - h : 0;
    const size_t hi = std::min(m_value.size(), i + h + 1);
    const uint32_t count = m_finiteCount[hi] - m_finiteCount[lo];
    if (count == 0) return std::numeric_limits<double>::quiet_NaN();
    return (m_finiteSum[hi] - m_finiteSum[lo]) / count;
}

double MetricSeries::smoothed(size_t i) const {
    switch (m_smoothing.kind) {
    case MetricSmoothing::Kind::None:
        return m_value[i];
    case MetricSmoothing::Kind::Ema:
        return m_smoothed[i];
    case MetricSmoothing::Kind::Window:
        return i < m_smoothed.size() ? m_smoothed[i] : windowMean(i);
    }
    return m_value[i];
}

const std::vector<double>& MetricSeries::column(MetricAxis axis) const {
    switch (axis) {
    case MetricAxis::Step:
        return m_step;
    case MetricAxis::Time:
        return m_time;
    case MetricAxis::Tokens:
        return m_tokens;
    }
    return m_step;
}

std::pair<size_t, size_t> MetricSeries::indexRange(MetricAxis axis, double x0, double x1) const {
    const std::vector<double>& xs = column(axis);
    const auto first = std::lower_bound(xs.begin(), xs.end(), x0);
    const auto last = std::upper_bound(first, xs.end(), x1);
    return {static_cast<size_t>(first - xs.begin()), static_cast<size_t>(last - xs.begin())};
}

std::optional<std::pair<double, double>> MetricSeries::xBounds(MetricAxis axis) const {
    if (empty()) return std::nullopt;
    const std::vector<double>& xs = column(axis);
    return std::make_pair(xs.front(), xs.back());
}

std::optional<size_t> MetricSeries::nearest(MetricAxis axis, double x) const {
    if (empty()) return std::nullopt;
    const std::vector<double>& xs = column(axis);
    const size_t i = static_cast<size_t>(std::lower_bound(xs.begin(), xs.end(), x) - xs.begin());
    if (i == 0) return 0;
    if (i == xs.size()) return xs.size() - 1;
    return (x - xs[i - 1] <= xs[i] - x) ? i - 1 : i;
}

MetricSeriesPyramid::Extent MetricSeries::extent(MetricChannel channel, size_t first,
                                                 size_t last) const {
    last = std::min(last, size());
    if (channel == MetricChannel::Raw || m_smoothing.kind == MetricSmoothing::Kind::None) {
        return m_rawPyramid.extent(first, last, [this](size_t i) { return m_value[i]; });
    }
    return m_smoothedPyramid.extent(first, last, [this](size_t i) { return smoothed(i); });
}

void MetricSeries::decimate(MetricChannel channel, MetricAxis axis, double x0, double x1,
                            int pixels, DecimatedPoints& out) const {
    out.clear();
    if (empty() || !(x1 >= x0)) return;
    const std::vector<double>& xs = column(axis);
    const auto [first, last] = indexRange(axis, x0, x1);
    auto push = [&](size_t i) {
        out.x.push_back(xs[i]);
        out.y.push_back(at(channel, i));
    };
    // The neighbours beyond the edges carry the line to the plot's border.
    if (first > 0) push(first - 1);
    const size_t columns = static_cast<size_t>(std::max(1, pixels));
    if (last - first <= 2 * columns) {
        for (size_t i = first; i < last; ++i) push(i);
    } else {
        out.x.reserve(2 * columns + 2);
        out.y.reserve(2 * columns + 2);
        const double width = x1 - x0;
        size_t a = first;
        for (size_t c = 0; c < columns && a < last; ++c) {
            // Column c holds the points with x in [x0 + c*w/W, x0 + (c+1)*w/W); the last one
            // also takes x1 itself.
            size_t b = last;
            if (c + 1 < columns) {
                const double edge = x0 + width * static_cast<double>(c + 1) / columns;
                b = static_cast<size_t>(std::lower_bound(xs.begin() + a, xs.begin() + last, edge) -
                                        xs.begin());
            }
            if (b == a) continue;
            const MetricSeriesPyramid::Extent e = extent(channel, a, b);
            if (e.empty()) {
                // Only NaNs in this column: a NaN point leaves a visible gap in the line.
                out.x.push_back(xs[a]);
                out.y.push_back(std::numeric_limits<double>::quiet_NaN());
            } else if (e.minIndex == e.maxIndex) {
                push(e.minIndex);
            } else {
                push(std::min(e.minIndex, e.maxIndex));
                push(std::max(e.minIndex, e.maxIndex));
            }
            a = b;
        }
    }
    if (last < size()) push(last);
}

size_t MetricSeries::memoryBytes() const {
    return (m_step.capacity() + m_time.capacity() + m_tokens.capacity() + m_value.capacity() +
            m_smoothed.capacity() + m_finiteSum.capacity()) *
               sizeof(double) +
           m_finiteCount.capacity() * sizeof(uint32_t) + m_rawPyramid.memoryBytes() +
           m_smoothedPyramid.memoryBytes();
}

} // namespace parallax

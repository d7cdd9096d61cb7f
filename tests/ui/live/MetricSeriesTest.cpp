#include "ui/models/MetricSeries.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace parallax {
namespace {

// A noisy decreasing curve with rare large spikes both ways, on irregular steps and times.
MetricSeries makeSeries(size_t n, unsigned seed, MetricSmoothing smoothing = {}) {
    MetricSeries s(smoothing);
    std::mt19937 rng(seed);
    std::normal_distribution<double> noise(0.0, 0.05);
    std::uniform_int_distribution<int> gap(1, 3);
    std::uniform_real_distribution<double> dt(0.05, 0.3);
    std::uniform_int_distribution<int> spike(0, 499);
    double step = 0, t = 1.7e9, tokens = 0;
    for (size_t i = 0; i < n; ++i) {
        double y = 2.0 * std::exp(-static_cast<double>(i) / static_cast<double>(n)) + noise(rng);
        const int r = spike(rng);
        if (r == 0) y += 25.0;
        if (r == 1) y -= 25.0;
        s.append(step, t, tokens, y);
        step += gap(rng);
        t += dt(rng);
        tokens += 4096;
    }
    return s;
}

// The column of x for a plot of `pixels` columns over [x0, x1], as MetricSeries documents it.
struct Columns {
    double x0, x1;
    int pixels;
    double edge(int c) const { return x0 + (x1 - x0) * static_cast<double>(c) / pixels; }
};

// Checks that every pixel column's minimum and maximum (by brute force over the full series)
// appear among the decimated points at the same x.
void expectExtremesKept(const MetricSeries& s, MetricChannel ch, MetricAxis axis, double x0, double x1, int pixels) {
    DecimatedPoints out;
    s.decimate(ch, axis, x0, x1, pixels, out);
    ASSERT_LE(out.size(), static_cast<size_t>(2 * pixels + 2));
    const Columns cols{x0, x1, pixels};
    for (int c = 0; c < pixels; ++c) {
        const double lo = cols.edge(c);
        const double hi = c + 1 < pixels ? cols.edge(c + 1) : std::numeric_limits<double>::infinity();
        double mn = std::numeric_limits<double>::infinity(), mx = -mn;
        double xMin = 0, xMax = 0;
        bool any = false;
        for (size_t i = 0; i < s.size(); ++i) {
            const double x = s.x(axis, i);
            if (x < lo || x >= hi || x > x1) continue;
            const double y = s.at(ch, i);
            if (!std::isfinite(y)) continue;
            any = true;
            if (y < mn) { mn = y; xMin = x; }
            if (y > mx) { mx = y; xMax = x; }
        }
        if (!any) continue;
        bool foundMin = false, foundMax = false;
        for (size_t k = 0; k < out.size(); ++k) {
            // Ties may keep any of the equal points, but always one inside the column.
            const bool inColumn = out.x[k] >= lo && out.x[k] < hi && out.x[k] <= x1;
            if (inColumn && out.y[k] == mn) foundMin = true;
            if (inColumn && out.y[k] == mx) foundMax = true;
        }
        EXPECT_TRUE(foundMin) << "column " << c << " lost its minimum " << mn << " at x " << xMin;
        EXPECT_TRUE(foundMax) << "column " << c << " lost its maximum " << mx << " at x " << xMax;
        if (!foundMin || !foundMax) return;
    }
    // Points come in x order (a line plot needs that).
    EXPECT_TRUE(std::is_sorted(out.x.begin(), out.x.end()));
}

TEST(MetricSeriesTest, DecimationKeepsEveryColumnsMinimumAndMaximum) {
    const MetricSeries s = makeSeries(60000, 7);
    std::mt19937 rng(11);
    const auto [first, last] = *s.xBounds(MetricAxis::Step);
    std::uniform_real_distribution<double> pos(first, last);
    std::uniform_int_distribution<int> width(50, 900);
    for (int trial = 0; trial < 12; ++trial) {
        double a = pos(rng), b = pos(rng);
        if (a > b) std::swap(a, b);
        expectExtremesKept(s, MetricChannel::Raw, MetricAxis::Step, a, b, width(rng));
    }
    expectExtremesKept(s, MetricChannel::Raw, MetricAxis::Step, first, last, 640);
}

TEST(MetricSeriesTest, DecimationKeepsExtremesOnTimeAndTokenAxesAndSmoothedChannel) {
    MetricSmoothing window;
    window.kind = MetricSmoothing::Kind::Window;
    window.window = 31;
    const MetricSeries s = makeSeries(40000, 3, window);
    for (MetricAxis axis : {MetricAxis::Time, MetricAxis::Tokens}) {
        const auto [first, last] = *s.xBounds(axis);
        expectExtremesKept(s, MetricChannel::Raw, axis, first, last, 500);
        expectExtremesKept(s, MetricChannel::Smoothed, axis, first + (last - first) * 0.3,
                           first + (last - first) * 0.9, 333);
    }
}

TEST(MetricSeriesTest, ASpikeSurvivesEveryZoomLevel) {
    MetricSeries s;
    for (int i = 0; i < 1'000'000; ++i) s.append(i, i, i, i == 654321 ? 1000.0 : 1.0);
    DecimatedPoints out;
    for (int pixels : {100, 400, 1600}) {
        s.decimate(MetricChannel::Raw, MetricAxis::Step, 0, 999999, pixels, out);
        EXPECT_LE(out.size(), static_cast<size_t>(2 * pixels + 2));
        EXPECT_EQ(*std::max_element(out.y.begin(), out.y.end()), 1000.0) << pixels << " px";
        const auto at = std::find(out.y.begin(), out.y.end(), 1000.0) - out.y.begin();
        EXPECT_EQ(out.x[static_cast<size_t>(at)], 654321.0);
    }
}

TEST(MetricSeriesTest, FewPointsAreReturnedAsTheyAreWithTheNeighboursBeyondTheEdges) {
    MetricSeries s;
    for (int i = 0; i < 100; ++i) s.append(i * 10, i, i, i * 0.5);
    DecimatedPoints out;
    s.decimate(MetricChannel::Raw, MetricAxis::Step, 205, 505, 800, out);
    // Steps 210..500 (30 points) plus 200 and 510 just outside.
    ASSERT_EQ(out.size(), 32u);
    EXPECT_EQ(out.x.front(), 200);
    EXPECT_EQ(out.x[1], 210);
    EXPECT_EQ(out.x.back(), 510);
    EXPECT_DOUBLE_EQ(out.y[1], 10.5);
}

TEST(MetricSeriesTest, PyramidExtentMatchesBruteForceIncludingTheUnabsorbedTail) {
    const MetricSeries s = makeSeries(10007, 5);
    std::mt19937 rng(2);
    std::uniform_int_distribution<size_t> idx(0, s.size());
    for (int trial = 0; trial < 300; ++trial) {
        size_t a = idx(rng), b = idx(rng);
        if (a > b) std::swap(a, b);
        const auto e = s.extent(MetricChannel::Raw, a, b);
        if (a == b) {
            EXPECT_TRUE(e.empty());
            continue;
        }
        double mn = s.value(a), mx = s.value(a);
        for (size_t i = a; i < b; ++i) {
            mn = std::min(mn, s.value(i));
            mx = std::max(mx, s.value(i));
        }
        EXPECT_EQ(e.min, mn);
        EXPECT_EQ(e.max, mx);
        EXPECT_EQ(s.value(e.minIndex), mn);
        EXPECT_EQ(s.value(e.maxIndex), mx);
    }
}

TEST(MetricSeriesTest, EmaIsComputedOnTheFullSeriesAndDebiased) {
    MetricSmoothing ema;
    ema.kind = MetricSmoothing::Kind::Ema;
    ema.emaWeight = 0.8;
    MetricSeries s(ema);
    std::vector<double> ys;
    std::mt19937 rng(1);
    std::uniform_real_distribution<double> u(0, 10);
    for (int i = 0; i < 5000; ++i) {
        ys.push_back(u(rng));
        s.append(i, i, i, ys.back());
    }
    double last = 0;
    for (size_t i = 0; i < ys.size(); ++i) {
        last = last * 0.8 + 0.2 * ys[i];
        const double expected = last / (1 - std::pow(0.8, static_cast<double>(i + 1)));
        ASSERT_NEAR(s.smoothed(i), expected, 1e-9 * std::max(1.0, std::abs(expected))) << i;
    }
    // The first smoothed value is the first raw value (debiasing), not 20% of it.
    EXPECT_DOUBLE_EQ(s.smoothed(0), ys[0]);

    // Decimated smoothed points are the full series' smoothed values, not a smoothing of the
    // decimated raw points.
    DecimatedPoints out;
    s.decimate(MetricChannel::Smoothed, MetricAxis::Step, 0, 4999, 100, out);
    for (size_t k = 0; k < out.size(); ++k) {
        EXPECT_EQ(out.y[k], s.smoothed(static_cast<size_t>(out.x[k])));
    }
}

TEST(MetricSeriesTest, CenteredWindowMatchesBruteForceEverywhereIncludingTheEnds) {
    MetricSmoothing win;
    win.kind = MetricSmoothing::Kind::Window;
    win.window = 9;
    MetricSeries s(win);
    std::vector<double> ys;
    for (int i = 0; i < 300; ++i) {
        ys.push_back(std::sin(i * 0.3) + (i % 17 == 0 ? 5.0 : 0.0));
        s.append(i, i, i, ys.back());
        // After every append the whole smoothed series is right, including the last points whose
        // window is still open.
        if (i % 37 == 0 || i == 299) {
            for (int j = 0; j <= i; ++j) {
                const int lo = std::max(0, j - 4), hi = std::min(i, j + 4);
                double sum = 0;
                for (int k = lo; k <= hi; ++k) sum += ys[static_cast<size_t>(k)];
                ASSERT_NEAR(s.smoothed(static_cast<size_t>(j)), sum / (hi - lo + 1), 1e-12) << j << " of " << i;
            }
        }
    }
    const auto e = s.extent(MetricChannel::Smoothed, 0, s.size());
    double mn = 1e300, mx = -1e300;
    for (size_t j = 0; j < s.size(); ++j) {
        mn = std::min(mn, s.smoothed(j));
        mx = std::max(mx, s.smoothed(j));
    }
    EXPECT_DOUBLE_EQ(e.min, mn);
    EXPECT_DOUBLE_EQ(e.max, mx);
}

TEST(MetricSeriesTest, ChangingTheSmoothingRecomputesAsIfGrownThatWay) {
    MetricSmoothing ema;
    ema.kind = MetricSmoothing::Kind::Ema;
    ema.emaWeight = 0.95;
    MetricSeries grown(ema);
    MetricSeries changed;
    for (int i = 0; i < 2000; ++i) {
        const double y = (i * 7919 % 1000) / 100.0;
        grown.append(i, i, i, y);
        changed.append(i, i, i, y);
    }
    changed.setSmoothing(ema);
    for (size_t i = 0; i < grown.size(); ++i) ASSERT_EQ(grown.smoothed(i), changed.smoothed(i));
    changed.setSmoothing({});
    EXPECT_EQ(changed.smoothed(10), changed.value(10));
}

TEST(MetricSeriesTest, NonFiniteValuesNeitherPoisonTheAverageNorHideAColumn) {
    MetricSmoothing ema;
    ema.kind = MetricSmoothing::Kind::Ema;
    MetricSeries s(ema);
    for (int i = 0; i < 1000; ++i) {
        s.append(i, i, i, i == 500 ? std::numeric_limits<double>::quiet_NaN() : 1.0);
    }
    EXPECT_TRUE(std::isfinite(s.smoothed(999)));
    EXPECT_NEAR(s.smoothed(999), 1.0, 1e-12);
    const auto e = s.extent(MetricChannel::Raw, 0, 1000);
    EXPECT_EQ(e.min, 1.0);
    EXPECT_EQ(e.max, 1.0);
    // A column of only NaNs becomes a gap (a NaN point) rather than vanishing silently.
    MetricSeries gaps;
    for (int i = 0; i < 1000; ++i) gaps.append(i, i, i, i >= 400 && i < 600 ? std::nan("") : 2.0);
    DecimatedPoints out;
    gaps.decimate(MetricChannel::Raw, MetricAxis::Step, 0, 999, 10, out);
    EXPECT_TRUE(std::any_of(out.y.begin(), out.y.end(), [](double y) { return std::isnan(y); }));
}

TEST(MetricSeriesTest, XColumnsStaySortedAndTimeIsRelativeToTheOrigin) {
    MetricSeries s;
    s.append(0, 1000.0, 10, 1);
    s.append(1, 1002.0, 20, 1);
    s.append(2, 1001.0, 0, 1); // clock stepped back, token count missing
    EXPECT_EQ(s.x(MetricAxis::Time, 0), 0.0);
    EXPECT_EQ(s.x(MetricAxis::Time, 2), 2.0);
    EXPECT_EQ(s.x(MetricAxis::Tokens, 2), 20.0);
    s.setTimeOrigin(990.0);
    EXPECT_EQ(s.x(MetricAxis::Time, 0), 10.0);
    EXPECT_EQ(*s.nearest(MetricAxis::Step, 1.4), 1u);
    const std::pair<size_t, size_t> expected(1, 3);
    EXPECT_EQ(s.indexRange(MetricAxis::Step, 0.5, 2.0), expected);
}

} // namespace
} // namespace parallax

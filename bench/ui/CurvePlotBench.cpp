// Pan/zoom over a 10,000,000-point series: the time from a new visible range to a rendered plot
// (decimation of the visible range at the plot's pixel width, QCustomPlot's replot into its paint
// buffers, and the widget's paint via grab()), median over many random pans and zooms, offscreen.
#include "bench/ui/BenchTable.h"
#include "ui/models/MetricSeries.h"
#include "ui/plots/CurvePlot.h"

#include <qcustomplot.h>

#include <QApplication>
#include <QElapsedTimer>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>

using namespace parallax;
using namespace parallax::bench;

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") &&
        qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
        qputenv("QT_QPA_PLATFORM", "offscreen");
    }
    QApplication app(argc, argv);
    const size_t n = argc > 1 ? std::stoul(argv[1]) : 10'000'000;
    const int pans = argc > 2 ? std::stoi(argv[2]) : 300;

    MetricSmoothing ema;
    ema.kind = MetricSmoothing::Kind::Ema;
    ema.emaWeight = 0.9;
    auto series = std::make_shared<MetricSeries>(ema);
    double appendNs = 0;
    series->reserve(n);
    std::mt19937 rng(42);
    {
        // A decaying noisy loss with rare spikes, generated before the timed appends.
        std::normal_distribution<double> noise(0, 0.05);
        std::uniform_int_distribution<int> spike(0, 99999);
        std::vector<double> ys(n);
        for (size_t i = 0; i < n; ++i) {
            ys[i] = 2.0 + 8.0 * std::exp(-static_cast<double>(i) / 1e6) + noise(rng);
            if (spike(rng) == 0) ys[i] += 20;
        }
        QElapsedTimer build;
        build.start();
        for (size_t i = 0; i < n; ++i) {
            const double x = static_cast<double>(i);
            series->append(x, 1.7e9 + x * 0.1, x * 4096.0, ys[i]);
        }
        appendNs = static_cast<double>(build.nsecsElapsed()) / static_cast<double>(n);
    }

    CurvePlot plot;
    plot.resize(1600, 500);
    plot.addCurve(QStringLiteral("loss"), series, MetricChannel::Raw, QColor(30, 136, 229, 90), 1.0);
    plot.addCurve(QStringLiteral("loss (smoothed)"), series, MetricChannel::Smoothed, QColor(21, 101, 192), 2.0);
    plot.setLegendVisible(true);
    plot.show();
    QApplication::processEvents();
    plot.replotNow(); // layout and caches settle

    std::uniform_real_distribution<double> unit(0, 1);
    std::vector<double> replotMs, pixmapMs, decimateMs;
    size_t points = 0;
    const double full = static_cast<double>(n - 1);
    for (int k = 0; k < pans; ++k) {
        // Visible spans from the whole series down to a few hundred points, anywhere in it.
        const double span = full * std::pow(10.0, -4.5 * unit(rng));
        const double lo = (full - span) * unit(rng);
        QElapsedTimer t;
        t.start();
        plot.setXRange(lo, lo + span);
        plot.replotNow();
        const qint64 replotted = t.nsecsElapsed();
        // The widget's own paint: what reaches the screen (QCustomPlot blits its buffers).
        const QPixmap pixmap = plot.grab();
        const qint64 rendered = t.nsecsElapsed();
        replotMs.push_back(static_cast<double>(replotted) / 1e6);
        pixmapMs.push_back(static_cast<double>(rendered) / 1e6);
        points = std::max(points, plot.drawnPoints());
        if (pixmap.isNull()) {
            std::fprintf(stderr, "grab() returned nothing\n");
            return 1;
        }
        QElapsedTimer d;
        DecimatedPoints out;
        d.start();
        series->decimate(MetricChannel::Raw, MetricAxis::Step, lo, lo + span, 1500, out);
        decimateMs.push_back(static_cast<double>(d.nsecsElapsed()) / 1e6);
    }

    const double median = percentile(replotMs, 0.5);
    const double medianPixmap = percentile(pixmapMs, 0.5);
    char buf[128];
    std::vector<BenchRow> rows;
    std::snprintf(buf, sizeof buf, "%.0f ns/point", appendNs);
    rows.push_back({"append (with EMA and min/max levels)", "", buf, true});
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(series->memoryBytes()) / 1048576.0);
    rows.push_back({"series memory, " + std::to_string(n) + " points", "", buf, true});
    rows.push_back({"decimate one channel, 1500 px (median)", "", ms(percentile(decimateMs, 0.5)), true});
    rows.push_back({"pan/zoom: decimate 2 curves + replot (median)", "< 16 ms", ms(median), median < 16.0});
    rows.push_back({"pan/zoom: decimate 2 curves + replot (p95)", "", ms(percentile(replotMs, 0.95)), true});
    rows.push_back({"pan/zoom: decimate + replot + grab() (median)", "< 16 ms", ms(medianPixmap), medianPixmap < 16.0});
    rows.push_back({"pan/zoom: decimate + replot + grab() (p95)", "", ms(percentile(pixmapMs, 0.95)), true});
    rows.push_back({"points drawn at most (2 curves, ~1500 px)", "", std::to_string(points), true});
    printTable("CurvePlot, " + std::to_string(n) + "-point series, " + std::to_string(pans) +
                   " random pans/zooms, 1600x500 offscreen",
               rows);
    return 0;
}

// The Pipeline view at scale: one step of a 1F1B schedule over 64 stages and 64 micro-batches
// (forward, backward and blocking-receive spans, ~16k bars), and the same with 4 ranks per stage
// (256 rows). Times: building the rows from the spans (once per step), the bubble analysis, and
// frames rendered offscreen into a QImage: a repaint of an unchanged view, and frames where the
// view changes every time (zoom or pan: the visible bars' rectangles are recomputed), at the whole
// step and zoomed in. Medians over many frames; the frame target is 16 ms (60 Hz).
//
// bench_ui_pipeline [--frames N] [--png FILE]   (FILE: the last full-view frame, to look at)
#include "bench/ui/BenchTable.h"
#include "core/telemetry/PipelineBubbles.h"
#include "tests/support/PipelineSpans.h"
#include "ui/models/SpanModel.h"
#include "ui/plots/PipelineTimeline.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QImage>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using namespace parallax;
using namespace parallax::bench;

namespace {

double medianMs(int runs, const std::function<void(int)>& body) {
    std::vector<double> ms;
    ms.reserve(size_t(runs));
    for (int i = 0; i < runs; ++i) {
        QElapsedTimer t;
        t.start();
        body(i);
        ms.push_back(double(t.nsecsElapsed()) / 1e6);
    }
    return percentile(ms, 0.5);
}

BenchRow frameRow(const std::string& what, double ms, double target = 16.0) {
    return {what, "< " + std::to_string(int(target)) + " ms", bench::ms(ms), ms < target};
}

} // namespace

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    int frames = 200;
    QString png;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--frames") && i + 1 < argc) frames = std::max(1, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--png") && i + 1 < argc) png = QString::fromLocal8Bit(argv[++i]);
        else {
            std::fprintf(stderr, "usage: %s [--frames N] [--png FILE]\n", argv[0]);
            return 2;
        }
    }

    std::vector<BenchRow> rows;
    for (int replicas : {1, 4}) {
        test::PipelineSpans crafted;
        crafted.stages = 64;
        crafted.microbatches = 64;
        crafted.replicas = replicas;
        const std::vector<SpanEvent> spans = crafted.make(1000);
        const std::string shape = "64x64" + (replicas > 1 ? " x" + std::to_string(replicas) + " ranks" : std::string());

        PipelineTimeline timeline;
        timeline.resize(1600, 900);
        QImage image(timeline.size(), QImage::Format_ARGB32_Premultiplied);
        auto frame = [&] { timeline.render(&image); };
        frame(); // fonts, glyph caches

        const double layout = medianMs(20, [&](int) { timeline.setSpans(spans); });
        SpanModel model;
        const double analysis = medianMs(20, [&](int) { model.setSpans(1000, spans); });
        rows.push_back({shape + ": spans -> rows (" + std::to_string(timeline.barCount()) + " bars)", "", ms(layout)});
        rows.push_back({shape + ": bubbles + order check + table", "", ms(analysis)});

        const double d = timeline.duration();
        timeline.resetView();
        frame();
        rows.push_back(frameRow(shape + ": repaint, whole step", medianMs(frames, [&](int) { frame(); })));
        // Zoom in and out about the middle each frame: every frame recomputes the visible bars.
        rows.push_back(frameRow(shape + ": zoom frame, whole step", medianMs(frames, [&](int i) {
            timeline.setView(i % 2 ? 0.0 : d * 0.001, d);
            frame();
        })));
        if (!png.isEmpty() && replicas == 1) {
            timeline.resetView();
            frame();
            image.save(png);
        }
        for (double zoom : {4.0, 16.0}) {
            const double width = d / zoom;
            rows.push_back(frameRow(shape + ": pan frame, zoomed " + std::to_string(int(zoom)) + "x",
                                    medianMs(frames, [&](int i) {
                                        const double start = (d - width) * double(i % 50) / 49.0;
                                        timeline.setView(start, start + width);
                                        frame();
                                    })));
        }
    }
    printTable("Pipeline timeline, 1600x900 offscreen (median of " + std::to_string(frames) + " frames)", rows);
    return 0;
}

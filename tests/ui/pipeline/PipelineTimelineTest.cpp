#include "tests/support/PipelineSpans.h"

#include "core/telemetry/PipelineBubbles.h"
#include "ui/plots/PipelineTimeline.h"

#include <QApplication>
#include <QFile>
#include <QTemporaryDir>
#include <QXmlStreamReader>
#include <QImage>
#include <QMouseEvent>
#include <QPainter>
#include <QSignalSpy>
#include <QWheelEvent>

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

using namespace parallax;
using namespace parallax::test;

namespace {

QImage render(PipelineTimeline& w) {
    QImage image(w.size(), QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::transparent);
    w.render(&image);
    return image;
}

int countColor(const QImage& image, const QColor& color, const QRect& area = QRect()) {
    const QRect r = area.isNull() ? image.rect() : area.intersected(image.rect());
    const QRgb want = color.rgb();
    int n = 0;
    for (int y = r.top(); y <= r.bottom(); ++y)
        for (int x = r.left(); x <= r.right(); ++x) n += (image.pixel(x, y) | 0xff000000u) == want ? 1 : 0;
    return n;
}

int pipelineSpanCount(const std::vector<SpanEvent>& spans) {
    return int(std::count_if(spans.begin(), spans.end(), [](const SpanEvent& s) {
        return PipelineBubbles::isCompute(s.kind) || PipelineBubbles::isPipelineComm(s.kind);
    }));
}

double firstStart(const std::vector<SpanEvent>& spans) {
    double t = std::numeric_limits<double>::infinity();
    for (const SpanEvent& s : spans) t = std::min(t, s.start);
    return t;
}

int findSpan(const std::vector<SpanEvent>& spans, int stage, int micro, const std::string& kind) {
    for (size_t i = 0; i < spans.size(); ++i)
        if (spans[i].stage == stage && spans[i].microbatch == micro && spans[i].kind == kind) return int(i);
    return -1;
}

// The middle of a span's bar on screen (its rank's row).
QPoint centerOf(const PipelineTimeline& w, int span) {
    const SpanEvent& s = w.spans()[size_t(span)];
    const double t0 = firstStart(w.spans());
    const QRect plot = w.plotRect();
    const double rowH = double(plot.height()) / w.rowCount();
    int row = 0;
    // Rows are ordered by stage, then rank, one per (stage, rank) pair.
    std::vector<std::pair<int, int>> keys;
    for (const SpanEvent& e : w.spans()) keys.emplace_back(e.stage, e.rank);
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    row = int(std::find(keys.begin(), keys.end(), std::make_pair(s.stage, s.rank)) - keys.begin());
    return QPoint(int(w.xAt((s.start + s.end) / 2 - t0)), plot.top() + int((row + 0.5) * rowH));
}

void wheel(QWidget& w, const QPoint& pos, int delta) {
    QWheelEvent e(QPointF(pos), QPointF(w.mapToGlobal(pos)), QPoint(), QPoint(0, delta), Qt::NoButton, Qt::NoModifier,
                  Qt::NoScrollPhase, false);
    QApplication::sendEvent(&w, &e);
}

void mouse(QWidget& w, QEvent::Type type, const QPoint& pos, Qt::MouseButtons buttons) {
    QMouseEvent e(type, QPointF(pos), QPointF(w.mapToGlobal(pos)), Qt::LeftButton, buttons, Qt::NoModifier);
    QApplication::sendEvent(&w, &e);
}

} // namespace

TEST(PipelineTimeline, PaintsSixtyFourStagesBySixtyFourMicrobatches) {
    PipelineSpans crafted;
    crafted.stages = 64;
    crafted.microbatches = 64;
    const std::vector<SpanEvent> spans = crafted.make(100);
    PipelineTimeline w;
    w.resize(1400, 900);
    w.setSpans(spans);
    EXPECT_EQ(w.rowCount(), 64);
    EXPECT_EQ(w.stageCount(), 64);
    EXPECT_EQ(w.barCount(), pipelineSpanCount(spans));
    EXPECT_GT(w.barCount(), 64 * 64 * 3 - 64 * 2);
    const QImage image = render(w);
    const QRect plot = w.plotRect();
    EXPECT_GT(countColor(image, PipelineTimeline::kindColor(PipelineTimeline::Forward), plot), 10000);
    EXPECT_GT(countColor(image, PipelineTimeline::kindColor(PipelineTimeline::Backward), plot), 10000);
    const double rowH = double(plot.height()) / 64;
    // Stage 0 starts the step with a forward; stage 63 waits for its first input until then.
    const QPoint firstRow(plot.left() + 1, plot.top() + int(rowH / 2));
    const QPoint lastRow(plot.left() + 1, plot.top() + int(63.5 * rowH));
    EXPECT_EQ(QColor(image.pixel(firstRow)).rgb(), PipelineTimeline::kindColor(PipelineTimeline::Forward).rgb());
    EXPECT_NE(QColor(image.pixel(lastRow)).rgb(), PipelineTimeline::kindColor(PipelineTimeline::Forward).rgb());
    EXPECT_NE(QColor(image.pixel(lastRow)).rgb(), PipelineTimeline::kindColor(PipelineTimeline::Backward).rgb());
    // And zoomed in, where bars are wide and numbered.
    w.zoom(1.0 / 16, w.duration() / 2);
    const QImage zoomed = render(w);
    EXPECT_GT(countColor(zoomed, PipelineTimeline::kindColor(PipelineTimeline::Backward), plot), 1000);
}

TEST(PipelineTimeline, TooltipsNameTheBarUnderTheCursor) {
    const std::vector<SpanEvent> spans = PipelineSpans{}.make(10);
    PipelineTimeline w;
    w.resize(1000, 400);
    w.setSpans(spans);
    const int b = findSpan(w.spans(), 2, 3, "B");
    ASSERT_GE(b, 0);
    const std::optional<int> hit = w.spanAt(centerOf(w, b));
    ASSERT_TRUE(hit.has_value());
    EXPECT_EQ(*hit, b);
    const QString tip = w.toolTipFor(*hit);
    EXPECT_TRUE(tip.contains(QStringLiteral("Backward"))) << tip.toStdString();
    EXPECT_TRUE(tip.contains(QStringLiteral("micro-batch 3"))) << tip.toStdString();
    EXPECT_TRUE(tip.contains(QStringLiteral("stage 2 · rank 2"))) << tip.toStdString();
    EXPECT_TRUE(tip.contains(QStringLiteral("976.6 µs,"))) << tip.toStdString(); // 1/1024 s
    const int recv = findSpan(w.spans(), 3, 0, "recv");
    ASSERT_GE(recv, 0);
    EXPECT_EQ(w.spanAt(centerOf(w, recv)), recv);
    EXPECT_TRUE(w.toolTipFor(recv).contains(QStringLiteral("Waiting to receive")));
    // Outside the plot, nothing.
    EXPECT_FALSE(w.spanAt(QPoint(2, 2)).has_value());
}

TEST(PipelineTimeline, WheelZoomsAboutTheCursorAndDragPans) {
    PipelineTimeline w;
    w.resize(1000, 400);
    w.setSpans(PipelineSpans{}.make(10));
    const double d = w.duration();
    EXPECT_DOUBLE_EQ(d, 22.0 / 1024.0);
    EXPECT_DOUBLE_EQ(w.viewStart(), 0.0);
    EXPECT_DOUBLE_EQ(w.viewEnd(), d);

    QSignalSpy views(&w, &PipelineTimeline::viewChanged);
    const QPoint at(int(w.xAt(d / 4)), w.plotRect().center().y());
    const double anchor = w.timeAt(at.x());
    wheel(w, at, 120);
    EXPECT_EQ(views.count(), 1);
    EXPECT_NEAR(w.viewEnd() - w.viewStart(), d * 0.8, 1e-12);
    EXPECT_NEAR(w.timeAt(at.x()), anchor, 1e-12);

    w.zoom(0.25, d / 2);
    const double width = w.viewEnd() - w.viewStart();
    const double before = w.viewStart();
    const double perPixel = width / w.plotRect().width();
    mouse(w, QEvent::MouseButtonPress, QPoint(500, 200), Qt::LeftButton);
    mouse(w, QEvent::MouseMove, QPoint(400, 200), Qt::LeftButton);
    mouse(w, QEvent::MouseButtonRelease, QPoint(400, 200), Qt::NoButton);
    EXPECT_NEAR(w.viewStart(), before + 100 * perPixel, 1e-12);
    EXPECT_NEAR(w.viewEnd() - w.viewStart(), width, 1e-12);

    // Panning and zooming stop at the step's ends.
    w.pan(10.0);
    EXPECT_NEAR(w.viewEnd(), d, 1e-12);
    w.zoom(100.0, 0.0);
    EXPECT_DOUBLE_EQ(w.viewStart(), 0.0);
    EXPECT_DOUBLE_EQ(w.viewEnd(), d);
    w.setView(d / 2, d / 2);
    EXPECT_GT(w.viewEnd(), w.viewStart());

    w.zoom(0.1, d / 2);
    mouse(w, QEvent::MouseButtonDblClick, QPoint(500, 200), Qt::LeftButton);
    EXPECT_DOUBLE_EQ(w.viewStart(), 0.0);
    EXPECT_DOUBLE_EQ(w.viewEnd(), d);
}

TEST(PipelineTimeline, KeepsTheZoomAcrossStepsWhenAsked) {
    PipelineTimeline w;
    w.resize(1000, 400);
    w.setSpans(PipelineSpans{}.make(10));
    w.setView(0.002, 0.004);
    w.setSpans(PipelineSpans{}.make(20), true);
    EXPECT_DOUBLE_EQ(w.viewStart(), 0.002);
    EXPECT_DOUBLE_EQ(w.viewEnd(), 0.004);
    w.setSpans(PipelineSpans{}.make(30));
    EXPECT_DOUBLE_EQ(w.viewStart(), 0.0);
}

TEST(PipelineTimeline, RanksOfAStageGetSubRows) {
    PipelineSpans crafted;
    crafted.replicas = 2;
    PipelineTimeline w;
    w.resize(1000, 400);
    w.setSpans(crafted.make(0));
    EXPECT_EQ(w.rowCount(), 8);
    EXPECT_EQ(w.stageCount(), 4);
    const int b = findSpan(w.spans(), 1, 5, "F");
    ASSERT_GE(b, 0);
    EXPECT_EQ(w.spanAt(centerOf(w, b)), b);
    w.setShowAllRanks(false);
    EXPECT_EQ(w.rowCount(), 4);
    EXPECT_EQ(w.barCount(), pipelineSpanCount(crafted.make(0)) / 2);
    EXPECT_FALSE(render(w).isNull());
}

TEST(PipelineTimeline, InterleavedPassesKnowTheirChunk) {
    PipelineSpans crafted;
    crafted.schedule = Schedule::Interleaved;
    crafted.chunks = 2;
    PipelineTimeline w;
    w.resize(1000, 400);
    w.setSpans(crafted.make(0));
    std::vector<int> forwards, backwards;
    for (int i = 0; i < int(w.spans().size()); ++i) {
        const SpanEvent& s = w.spans()[size_t(i)];
        if (s.rank == 1 && s.microbatch == 2 && s.kind != "recv") (s.kind == "F" ? forwards : backwards).push_back(i);
    }
    ASSERT_EQ(forwards.size(), 2u);
    ASSERT_EQ(backwards.size(), 2u);
    auto byStart = [&](int a, int b) { return w.spans()[size_t(a)].start < w.spans()[size_t(b)].start; };
    std::sort(forwards.begin(), forwards.end(), byStart);
    std::sort(backwards.begin(), backwards.end(), byStart);
    EXPECT_EQ(w.chunkOf(forwards[0]), 0);
    EXPECT_EQ(w.chunkOf(forwards[1]), 1);
    EXPECT_EQ(w.chunkOf(backwards[0]), 1);
    EXPECT_EQ(w.chunkOf(backwards[1]), 0);
    EXPECT_EQ(w.chunksOf(backwards[1]), 2);
    EXPECT_TRUE(w.toolTipFor(forwards[1]).contains(QStringLiteral("chunk 2 of 2")));
}

TEST(PipelineTimeline, WideBarsCarryTheirMicroBatchNumber) {
    PipelineTimeline w;
    w.resize(1000, 400);
    const std::vector<SpanEvent> spans = PipelineSpans{}.make(10);
    w.setSpans(spans);
    const int f = findSpan(w.spans(), 0, 0, "F");
    const SpanEvent& s = w.spans()[size_t(f)];
    const double t0 = firstStart(w.spans());
    w.setView(s.start - t0, s.end - t0 + (s.end - s.start) * 0.5);
    const QImage image = render(w);
    const QRect plot = w.plotRect();
    const int rowH = plot.height() / w.rowCount();
    const QRect bar(int(w.xAt(s.start - t0)), plot.top(), int(w.xAt(s.end - t0) - w.xAt(s.start - t0)), rowH);
    EXPECT_GT(countColor(image, Qt::white, bar), 0);
    EXPECT_GT(countColor(image, PipelineTimeline::kindColor(PipelineTimeline::Forward), bar), bar.width() * rowH / 2);
    // Hovering outlines the micro-batch everywhere; nothing else changes.
    w.setHighlightedMicrobatch(0);
    EXPECT_EQ(w.highlightedMicrobatch(), 0);
    EXPECT_NE(render(w), image);
}

TEST(PipelineTimeline, EmptyShowsThePlaceholder) {
    PipelineTimeline w;
    w.resize(600, 300);
    w.setSpans(PipelineSpans{}.make(10));
    w.clear();
    EXPECT_EQ(w.rowCount(), 0);
    EXPECT_EQ(w.barCount(), 0);
    w.setPlaceholderText(QStringLiteral("nothing here"));
    const QImage image = render(w);
    EXPECT_FALSE(image.isNull());
    EXPECT_FALSE(w.spanAt(w.plotRect().center()).has_value());
    // Spans of kinds the timeline does not draw are left out.
    SpanEvent optimizer;
    optimizer.kind = "optimizer";
    optimizer.start = 1;
    optimizer.end = 2;
    w.setSpans({optimizer});
    EXPECT_EQ(w.rowCount(), 0);
}

TEST(PipelineTimeline, OddChunksOfAnInterleavedScheduleAreLighter) {
    PipelineSpans crafted;
    crafted.schedule = Schedule::Interleaved;
    crafted.chunks = 2;
    PipelineTimeline w;
    w.resize(1200, 400);
    w.setSpans(crafted.make(0));
    const QImage image = render(w);
    const QRect plot = w.plotRect();
    for (PipelineTimeline::Kind k : {PipelineTimeline::Forward, PipelineTimeline::Backward}) {
        EXPECT_GT(countColor(image, PipelineTimeline::kindColor(k), plot), 1000) << int(k);
        EXPECT_GT(countColor(image, PipelineTimeline::laterChunkColor(k), plot), 1000) << int(k);
    }
    // One chunk per stage: no lighter bars.
    w.setSpans(PipelineSpans{}.make(0));
    EXPECT_EQ(countColor(render(w), PipelineTimeline::laterChunkColor(PipelineTimeline::Forward), plot), 0);
}

TEST(PipelineTimeline, ExportsTheStepAsPngSvgRectanglesAndCsvRows) {
    PipelineTimeline w;
    w.resize(640, 300);
    const std::vector<SpanEvent> spans = PipelineSpans{}.make(30);
    w.setSpans(spans);
    QTemporaryDir dir;
    QString error;

    const QString png = dir.filePath(QStringLiteral("step.png"));
    ASSERT_TRUE(w.exporter()->savePng(png, &error)) << error.toStdString();
    const QImage image(png);
    EXPECT_EQ(image.size(), QSize(640, 300));
    EXPECT_GT(countColor(image, PipelineTimeline::kindColor(PipelineTimeline::Forward)), 200);

    // SVG: a rectangle per bar (vectors, not the screen's bitmap of them).
    const QString svgPath = dir.filePath(QStringLiteral("step.svg"));
    ASSERT_TRUE(w.exporter()->saveSvg(svgPath, &error)) << error.toStdString();
    QFile svgFile(svgPath);
    ASSERT_TRUE(svgFile.open(QIODevice::ReadOnly));
    const QByteArray svg = svgFile.readAll();
    QXmlStreamReader xml(svg);
    int rects = 0;
    bool root = false;
    while (!xml.atEnd()) {
        xml.readNext();
        if (!xml.isStartElement()) continue;
        if (xml.name() == QStringLiteral("svg")) root = true;
        if (xml.name() == QStringLiteral("rect")) ++rects;
    }
    EXPECT_FALSE(xml.hasError()) << xml.errorString().toStdString();
    EXPECT_TRUE(root);
    EXPECT_GE(rects, w.barCount());
    EXPECT_FALSE(svg.contains("<image"));

    // CSV: a row per drawn span with times from the step's first span.
    const QString csvPath = dir.filePath(QStringLiteral("step.csv"));
    ASSERT_TRUE(w.exporter()->saveCsv(csvPath, &error)) << error.toStdString();
    QFile csvFile(csvPath);
    ASSERT_TRUE(csvFile.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(csvFile.readAll()).split(QChar('\n'), Qt::SkipEmptyParts);
    ASSERT_EQ(lines.size(), pipelineSpanCount(spans) + 1);
    EXPECT_EQ(lines[0], QStringLiteral("step,stage,rank,microbatch,chunk,kind,start_ms,end_ms"));
    EXPECT_EQ(lines[1], QStringLiteral("30,0,0,0,0,F,0,0.9765625"));
}

#include "ui/plots/PipelineTimeline.h"

#include "core/telemetry/SpanKind.h"

#include <QEvent>
#include <QLocale>
#include <QHelpEvent>
#include <QMouseEvent>
#include <QPaintEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

namespace parallax {

namespace {

constexpr double kMinViewSeconds = 1e-6;
// One wheel notch zooms by this factor.
constexpr double kWheelZoom = 0.8;
// A bar this close to the cursor (pixels) still answers a tooltip: thin bars are hard to hit.
constexpr int kHitSlackPx = 2;

std::optional<PipelineTimeline::Kind> kindOf(const std::string& name) {
    const std::optional<SpanKind> kind = spanKindNamed(name);
    if (!kind) return std::nullopt;
    switch (*kind) {
    case SpanKind::Forward: return PipelineTimeline::Forward;
    case SpanKind::Backward: return PipelineTimeline::Backward;
    case SpanKind::Weight: return PipelineTimeline::Weight;
    case SpanKind::Recv:
    case SpanKind::Send: return PipelineTimeline::Comm;
    }
    return std::nullopt;
}

QString kindName(const std::string& name) {
    const std::optional<SpanKind> kind = spanKindNamed(name);
    if (!kind) return QString::fromStdString(name);
    switch (*kind) {
    case SpanKind::Forward: return PipelineTimeline::tr("Forward");
    case SpanKind::Backward: return PipelineTimeline::tr("Backward");
    case SpanKind::Weight: return PipelineTimeline::tr("Weight gradients");
    case SpanKind::Recv: return PipelineTimeline::tr("Waiting to receive");
    case SpanKind::Send: return PipelineTimeline::tr("Draining sends");
    }
    return QString::fromStdString(name);
}

// 1, 2 or 5 times a power of ten, about `target` wide.
double niceStep(double target) {
    if (!(target > 0)) return 1;
    const double p = std::pow(10.0, std::floor(std::log10(target)));
    for (double m : {1.0, 2.0, 5.0})
        if (m * p >= target) return m * p;
    return 10 * p;
}

QString formatTime(double seconds, double step) {
    if (step >= 1.0) return QStringLiteral("%1 s").arg(seconds, 0, 'f', 0);
    const double stepMs = step * 1e3;
    const int decimals = std::clamp(int(std::ceil(-std::log10(stepMs) - 1e-9)), 0, 6);
    return QStringLiteral("%1 ms").arg(seconds * 1e3, 0, 'f', decimals);
}

// A span's length or offset to the microsecond (the run-length formatter, formatDuration, stops at seconds).
QString formatSpanLength(double seconds) {
    if (seconds >= 1.0) return QStringLiteral("%1 s").arg(seconds, 0, 'f', 3);
    if (seconds >= 1e-3) return QStringLiteral("%1 ms").arg(seconds * 1e3, 0, 'f', 3);
    return QStringLiteral("%1 µs").arg(seconds * 1e6, 0, 'f', 1);
}

} // namespace

PipelineTimeline::PipelineTimeline(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setAttribute(Qt::WA_OpaquePaintEvent);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
    setFocusPolicy(Qt::StrongFocus);
    m_placeholder = tr("No spans recorded for this step");
    layoutMargins();
    m_export = new PlotExport(
        this,
        [this](QPaintDevice& device, const QSize&) {
            // Bars as vectors on an SVG generator, as the screen shows them on an image.
            m_vectorPaint = device.devType() != QInternal::Image;
            QPainter painter(&device);
            render(&painter);
            m_vectorPaint = false;
        },
        [this] { return table(); }, QStringLiteral("pipeline-step"));
}

PlotTable PipelineTimeline::table() const {
    PlotTable out;
    out.header = QStringList{QStringLiteral("step"), QStringLiteral("stage"), QStringLiteral("rank"),
                             QStringLiteral("microbatch"), QStringLiteral("chunk"), QStringLiteral("kind"),
                             QStringLiteral("start_ms"), QStringLiteral("end_ms")};
    double t0 = std::numeric_limits<double>::infinity();
    for (const SpanEvent& s : m_spans) t0 = std::min(t0, s.start);
    std::vector<int> order(m_spans.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = int(i);
    // As the rows are drawn: by stage, rank, then time.
    std::sort(order.begin(), order.end(), [this](int a, int b) {
        const SpanEvent& x = m_spans[size_t(a)];
        const SpanEvent& y = m_spans[size_t(b)];
        return std::tie(x.stage, x.rank, x.start) < std::tie(y.stage, y.rank, y.start);
    });
    auto ms = [](double seconds) { return QString::number(seconds * 1e3, 'g', QLocale::FloatingPointShortest); };
    for (int i : order) {
        const SpanEvent& s = m_spans[size_t(i)];
        out.rows.push_back({QString::number(s.step), QString::number(s.stage), QString::number(s.rank),
                            QString::number(s.microbatch), QString::number(m_chunk[size_t(i)]),
                            QString::fromStdString(s.kind), ms(s.start - t0), ms(std::max(s.start, s.end) - t0)});
    }
    return out;
}

PipelineTimeline::~PipelineTimeline() = default;

QColor PipelineTimeline::kindColor(Kind kind) {
    switch (kind) {
    case Forward: return QColor(0x4e, 0x79, 0xa7);
    case Backward: return QColor(0xe8, 0x7a, 0x1d);
    case Weight: return QColor(0x8c, 0x6b, 0xb1);
    case Comm: return QColor(0x86, 0x86, 0x86);
    case KindCount: break;
    }
    return QColor(Qt::black);
}

QColor PipelineTimeline::laterChunkColor(Kind kind) {
    return kind == Comm ? kindColor(kind) : kindColor(kind).lighter(135);
}

QSize PipelineTimeline::sizeHint() const { return QSize(900, 420); }
QSize PipelineTimeline::minimumSizeHint() const { return QSize(240, 120); }

void PipelineTimeline::setSpans(const std::vector<SpanEvent>& spans, bool keepView) {
    const double oldStart = m_viewStart, oldEnd = m_viewEnd, oldDuration = m_duration;
    const bool zoomed = oldDuration > 0 && (oldStart > 0 || oldEnd < oldDuration);
    m_spans.clear();
    m_spans.reserve(spans.size());
    for (const SpanEvent& s : spans)
        if (kindOf(s.kind)) m_spans.push_back(s);
    m_highlight = -1;
    buildRows();
    if (keepView && zoomed && m_duration >= oldEnd) {
        m_viewStart = oldStart;
        m_viewEnd = oldEnd;
        invalidateGeometry();
    } else {
        resetView();
    }
}

void PipelineTimeline::clear() { setSpans({}); }

void PipelineTimeline::setPlaceholderText(const QString& text) {
    m_placeholder = text;
    if (m_rows.empty()) update();
}

void PipelineTimeline::setShowAllRanks(bool on) {
    if (on == m_showAllRanks) return;
    m_showAllRanks = on;
    buildRows();
    invalidateGeometry();
}

void PipelineTimeline::buildRows() {
    m_rows.clear();
    m_chunk.assign(m_spans.size(), 0);
    m_chunks.assign(m_spans.size(), 1);
    m_barCount = 0;
    m_stageCount = 0;
    m_duration = 0;
    if (m_spans.empty()) return;

    double t0 = std::numeric_limits<double>::infinity();
    double t1 = -std::numeric_limits<double>::infinity();
    for (const SpanEvent& s : m_spans) {
        t0 = std::min(t0, s.start);
        t1 = std::max(t1, std::max(s.start, s.end));
    }
    m_duration = t1 - t0;

    // Which chunk each pass is: a rank runs a micro-batch's forwards in chunk order and its
    // backwards in reverse.
    std::map<std::tuple<int, int, int, Kind>, std::vector<int>> passes; // (rank, stage, micro, kind)
    for (int i = 0; i < int(m_spans.size()); ++i) {
        const Kind k = *kindOf(m_spans[size_t(i)].kind);
        if (k == Comm) continue;
        const SpanEvent& s = m_spans[size_t(i)];
        passes[{s.rank, s.stage, s.microbatch, k}].push_back(i);
    }
    for (auto& [key, list] : passes) {
        std::sort(list.begin(), list.end(), [&](int a, int b) { return m_spans[size_t(a)].start < m_spans[size_t(b)].start; });
        const auto& [rank, stage, micro, kind] = key;
        auto forwards = passes.find({rank, stage, micro, Forward});
        const int n = std::max<int>(int(list.size()), forwards == passes.end() ? 0 : int(forwards->second.size()));
        for (int k = 0; k < int(list.size()); ++k) {
            m_chunk[size_t(list[size_t(k)])] = kind == Forward ? k : n - 1 - k;
            m_chunks[size_t(list[size_t(k)])] = n;
        }
    }

    std::map<std::pair<int, int>, Row> rows; // (stage, rank)
    for (int i = 0; i < int(m_spans.size()); ++i) {
        const SpanEvent& s = m_spans[size_t(i)];
        Row& row = rows[{s.stage, s.rank}];
        row.stage = s.stage;
        row.rank = s.rank;
        Bar b;
        b.start = s.start - t0;
        b.end = std::max(s.start, s.end) - t0;
        b.micro = s.microbatch;
        b.span = i;
        b.kind = *kindOf(s.kind);
        (b.kind == Comm ? row.comm : row.compute).push_back(b);
    }
    std::map<int, int> ranksPerStage;
    for (const auto& [key, row] : rows) ++ranksPerStage[key.first];
    m_stageCount = int(ranksPerStage.size());
    int lastStage = std::numeric_limits<int>::min();
    for (auto& [key, row] : rows) {
        const bool first = key.first != lastStage;
        lastStage = key.first;
        if (!first && !m_showAllRanks) continue;
        row.firstOfStage = first;
        row.ranksInStage = ranksPerStage[key.first];
        for (std::vector<Bar>* bars : {&row.compute, &row.comm}) {
            std::sort(bars->begin(), bars->end(), [](const Bar& a, const Bar& b) { return a.start < b.start; });
            double& longest = bars == &row.compute ? row.longestCompute : row.longestComm;
            for (const Bar& b : *bars) longest = std::max(longest, b.end - b.start);
            m_barCount += int(bars->size());
        }
        m_rows.push_back(std::move(row));
    }
}

void PipelineTimeline::resetView() {
    m_viewStart = 0;
    m_viewEnd = std::max(m_duration, kMinViewSeconds);
    invalidateGeometry();
    emit viewChanged(m_viewStart, m_viewEnd);
}

void PipelineTimeline::setView(double start, double end) {
    const double full = std::max(m_duration, kMinViewSeconds);
    double width = std::clamp(end - start, kMinViewSeconds, full);
    if (!std::isfinite(width)) width = full;
    start = std::clamp(std::isfinite(start) ? start : 0.0, 0.0, full - width);
    if (start == m_viewStart && start + width == m_viewEnd) return;
    m_viewStart = start;
    m_viewEnd = start + width;
    invalidateGeometry();
    emit viewChanged(m_viewStart, m_viewEnd);
}

void PipelineTimeline::zoom(double factor, double anchor) {
    const double width = m_viewEnd - m_viewStart;
    if (!(width > 0) || !(factor > 0)) return;
    const double full = std::max(m_duration, kMinViewSeconds);
    const double newWidth = std::clamp(width * factor, kMinViewSeconds, full);
    const double start = anchor - (anchor - m_viewStart) * newWidth / width;
    setView(start, start + newWidth);
}

void PipelineTimeline::pan(double seconds) { setView(m_viewStart + seconds, m_viewEnd + seconds); }

void PipelineTimeline::setHighlightedMicrobatch(int micro) {
    if (micro == m_highlight) return;
    m_highlight = micro;
    update();
}

int PipelineTimeline::chunkOf(int span) const {
    return span >= 0 && span < int(m_chunk.size()) ? m_chunk[size_t(span)] : 0;
}

int PipelineTimeline::chunksOf(int span) const {
    return span >= 0 && span < int(m_chunks.size()) ? m_chunks[size_t(span)] : 1;
}

QString PipelineTimeline::toolTipFor(int span) const {
    if (span < 0 || span >= int(m_spans.size())) return {};
    const SpanEvent& s = m_spans[size_t(span)];
    QString what = QStringLiteral("<b>%1</b>").arg(kindName(s.kind).toHtmlEscaped());
    if (s.microbatch >= 0) {
        what += tr(" · micro-batch %1").arg(s.microbatch);
        if (kindOf(s.kind) != Comm && chunksOf(span) > 1)
            what += tr(" (chunk %1 of %2)").arg(chunkOf(span) + 1).arg(chunksOf(span));
    }
    double t0 = std::numeric_limits<double>::infinity();
    for (const SpanEvent& e : m_spans) t0 = std::min(t0, e.start);
    return QStringLiteral("%1<br>%2<br>%3")
        .arg(what, tr("stage %1 · rank %2").arg(s.stage).arg(s.rank),
             tr("%1, from %2 to %3 after the step's start")
                 .arg(formatSpanLength(s.end - s.start), formatSpanLength(s.start - t0), formatSpanLength(s.end - t0)));
}

// --- geometry

void PipelineTimeline::layoutMargins() {
    const QFontMetrics fm(font());
    m_leftMargin = fm.horizontalAdvance(QStringLiteral("S000 r0000")) + 12;
    m_topMargin = fm.height() + 8;
    m_bottomMargin = fm.height() + 10;
    m_barFont = font();
    m_barFont.setBold(true);
    m_barFont.setPointSizeF(std::max(6.0, font().pointSizeF() * 0.9));
    m_barTextHeight = QFontMetrics(m_barFont).ascent();
    m_microTexts.clear();
    m_microTextWidths.clear();
}

QRect PipelineTimeline::plotRect() const {
    return QRect(m_leftMargin, m_topMargin, std::max(1, width() - m_leftMargin - 8),
                 std::max(1, height() - m_topMargin - m_bottomMargin));
}

double PipelineTimeline::rowHeight() const {
    return m_rows.empty() ? 0.0 : double(plotRect().height()) / double(m_rows.size());
}

double PipelineTimeline::timeAt(double x) const {
    const QRect plot = plotRect();
    return m_viewStart + (x - plot.left()) * (m_viewEnd - m_viewStart) / double(plot.width());
}

double PipelineTimeline::xAt(double seconds) const {
    const QRect plot = plotRect();
    return plot.left() + (seconds - m_viewStart) * double(plot.width()) / (m_viewEnd - m_viewStart);
}

int PipelineTimeline::rowAtY(int y) const {
    const QRect plot = plotRect();
    if (m_rows.empty() || y < plot.top() || y > plot.bottom()) return -1;
    const int row = int(double(y - plot.top()) / rowHeight());
    return std::clamp(row, 0, int(m_rows.size()) - 1);
}

void PipelineTimeline::invalidateGeometry() {
    m_geometryDirty = true;
    update();
}

void PipelineTimeline::ensureGeometry() {
    if (!m_geometryDirty) return;
    m_geometryDirty = false;
    m_layerDirty = true;
    const QRect plot = plotRect();
    m_pixels.assign(m_rows.size(), PixelRow{});
    if (m_rows.empty()) return;
    const double rowH = rowHeight();
    const double scale = double(plot.width()) / (m_viewEnd - m_viewStart);
    const double left = plot.left();
    // Pixel coordinates far outside the plot are clamped before they become ints.
    const double xMin = plot.left() - 2.0, xMax = plot.right() + 2.0;

    for (size_t i = 0; i < m_rows.size(); ++i) {
        const Row& row = m_rows[i];
        PixelRow& px = m_pixels[i];
        const int top = plot.top() + int(std::lround(double(i) * rowH));
        const int bottom = plot.top() + int(std::lround(double(i + 1) * rowH));
        px.band = QRect(plot.left(), top, plot.width(), std::max(1, bottom - top));
        const int pad = rowH >= 8 ? std::max(1, int(rowH * 0.1)) : 0;
        const int barTop = top + pad;
        const int barH = std::max(1, bottom - top - 2 * pad);
        const int commH = std::max(1, int(std::lround(barH * 0.3)));
        const int commTop = barTop + (barH - commH) / 2;

        auto place = [&](const std::vector<Bar>& bars, double longest, int y, int h) {
            auto it = std::lower_bound(bars.begin(), bars.end(), m_viewStart - longest,
                                       [](const Bar& b, double t) { return b.start < t; });
            for (; it != bars.end() && it->start <= m_viewEnd; ++it) {
                if (it->end < m_viewStart) continue;
                const double x0 = std::clamp(left + (it->start - m_viewStart) * scale, xMin, xMax);
                const double x1 = std::clamp(left + (it->end - m_viewStart) * scale, xMin, xMax);
                const int l = int(std::floor(x0));
                int w = std::max(1, int(std::floor(x1)) - l);
                // A pixel's gap keeps neighbouring bars of one kind apart.
                if (w >= 4) w -= 1;
                QVector<QRect>& rects = px.rects[it->kind];
                QVector<int>& micro = px.micro[it->kind];
                // Bars thinner than a pixel merge into the one they share it with.
                if (!rects.isEmpty() && l <= rects.back().right() && rects.back().width() <= 2 && w <= 2) {
                    QRect& prev = rects.back();
                    prev.setRight(std::max(prev.right(), l + w - 1));
                    micro.back() = -1;
                    continue;
                }
                rects.append(QRect(l, y, w, h));
                micro.append(it->micro);
                px.laterChunk[it->kind].append(it->kind != Comm && m_chunk[size_t(it->span)] % 2 == 1);
            }
        };
        place(row.compute, row.longestCompute, barTop, barH);
        place(row.comm, row.longestComm, commTop, commH);
    }
}

const QStaticText& PipelineTimeline::microText(int micro) {
    if (micro >= int(m_microTexts.size())) {
        const QFontMetrics fm(m_barFont);
        for (int m = int(m_microTexts.size()); m <= micro; ++m) {
            QStaticText t(QString::number(m));
            t.setTextFormat(Qt::PlainText);
            t.prepare(QTransform(), m_barFont);
            m_microTexts.push_back(t);
            m_microTextWidths.push_back(fm.horizontalAdvance(QString::number(m)));
        }
    }
    return m_microTexts[size_t(micro)];
}

std::optional<int> PipelineTimeline::spanAt(const QPoint& pos) const {
    const int r = rowAtY(pos.y());
    const QRect plot = plotRect();
    if (r < 0 || pos.x() < plot.left() || pos.x() > plot.right()) return std::nullopt;
    const Row& row = m_rows[size_t(r)];
    const double t = timeAt(pos.x());
    const double slack = kHitSlackPx * (m_viewEnd - m_viewStart) / double(plot.width());
    for (const auto* bars : {&row.compute, &row.comm}) {
        const double longest = bars == &row.compute ? row.longestCompute : row.longestComm;
        auto it = std::lower_bound(bars->begin(), bars->end(), t - longest - slack,
                                   [](const Bar& b, double x) { return b.start < x; });
        std::optional<int> nearest;
        double best = std::numeric_limits<double>::infinity();
        for (; it != bars->end() && it->start <= t + slack; ++it) {
            if (t >= it->start && t <= it->end) return it->span;
            const double d = t < it->start ? it->start - t : t - it->end;
            if (d <= slack && d < best) {
                best = d;
                nearest = it->span;
            }
        }
        if (nearest) return nearest;
    }
    return std::nullopt;
}

// --- painting

void PipelineTimeline::paintLegend(QPainter& p) {
    const QFontMetrics fm(font());
    int x = m_leftMargin;
    const int y = 4;
    const int box = fm.ascent() - 2;
    const QColor ink = palette().color(QPalette::WindowText);
    auto item = [&](const QColor& fill, int h, const QString& text) {
        p.fillRect(QRect(x, y + (fm.height() - box) / 2 + (box - h) / 2, box, h), fill);
        x += box + 4;
        p.setPen(ink);
        p.drawText(QPoint(x, y + fm.ascent()), text);
        x += fm.horizontalAdvance(text) + 14;
    };
    item(kindColor(Forward), box, tr("forward"));
    item(kindColor(Backward), box, tr("backward"));
    if (std::any_of(m_chunks.begin(), m_chunks.end(), [](int n) { return n > 1; })) {
        // Interleaved: odd chunks in a lighter shade, so that a stage's chunks tell apart.
        p.fillRect(QRect(x, y + (fm.height() - box) / 2, box, box), laterChunkColor(Forward));
        x += box + 2;
        item(laterChunkColor(Backward), box, tr("odd model chunks"));
    }
    bool weights = false;
    for (const Row& r : m_rows)
        for (const Bar& b : r.compute) weights = weights || b.kind == Weight;
    if (weights) item(kindColor(Weight), box, tr("weight gradients"));
    item(kindColor(Comm), std::max(2, box / 3), tr("recv / send"));
    p.setPen(palette().color(QPalette::Mid));
    p.setBrush(idleColor(false));
    p.drawRect(QRect(x, y + (fm.height() - box) / 2, box, box));
    x += box + 4;
    p.setPen(ink);
    p.drawText(QPoint(x, y + fm.ascent()), tr("idle"));
    x += fm.horizontalAdvance(tr("idle")) + 14;
    if (m_duration > 0) {
        const QString span = tr("step window %1").arg(formatSpanLength(m_duration));
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(QRect(x, y, width() - x - 8, fm.height()), Qt::AlignRight | Qt::AlignVCenter, span);
    }
}

void PipelineTimeline::paintGutter(QPainter& p, const QRect& plot, const QRect& exposed) {
    if (exposed.left() >= plot.left() || m_rows.empty()) return;
    const QFontMetrics fm(font());
    const double rowH = rowHeight();
    const bool subRows = std::any_of(m_rows.begin(), m_rows.end(), [](const Row& r) { return r.ranksInStage > 1; }) &&
                         m_showAllRanks;
    // Labels no closer than a line apart: every k-th stage (or row) when rows are thin.
    const int lineH = fm.height();
    int rowsPerStage = 1;
    if (subRows) rowsPerStage = std::max(1, int(m_rows.size()) / std::max(1, m_stageCount));
    const double stageH = rowH * rowsPerStage;
    const int stageEvery = std::max(1, int(std::ceil(lineH / std::max(stageH, 1e-9))));
    const bool rankLabels = subRows && rowH >= lineH;
    const QColor ink = palette().color(QPalette::WindowText);
    const QColor faint = palette().color(QPalette::PlaceholderText);
    int stageIndex = -1;
    for (size_t i = 0; i < m_rows.size(); ++i) {
        const Row& row = m_rows[i];
        if (row.firstOfStage) ++stageIndex;
        const int top = plot.top() + int(std::lround(double(i) * rowH));
        const int bottom = plot.top() + int(std::lround(double(i + 1) * rowH));
        if (bottom < exposed.top() || top > exposed.bottom()) continue;
        if (row.firstOfStage && stageIndex % stageEvery == 0) {
            // Beside its first rank's row when ranks are labelled, else centred on the stage.
            const int labelH = rankLabels ? bottom - top : std::max(lineH, int(std::lround(stageH)));
            p.setPen(ink);
            p.drawText(QRect(4, top, m_leftMargin - 10, labelH), Qt::AlignLeft | Qt::AlignVCenter,
                       QStringLiteral("S%1").arg(row.stage));
        }
        if (rankLabels) {
            p.setPen(faint);
            p.drawText(QRect(4, top, m_leftMargin - 10, bottom - top), Qt::AlignRight | Qt::AlignVCenter,
                       QStringLiteral("r%1").arg(row.rank));
        }
    }
}

void PipelineTimeline::paintAxis(QPainter& p, const QRect& plot) {
    const QFontMetrics fm(font());
    const double range = m_viewEnd - m_viewStart;
    const double step = niceStep(range * 90.0 / std::max(1, plot.width()));
    const QColor ink = palette().color(QPalette::WindowText);
    const QColor grid = palette().color(QPalette::Mid);
    p.setPen(grid);
    p.drawLine(plot.left(), plot.bottom() + 1, plot.right(), plot.bottom() + 1);
    for (double t = std::ceil(m_viewStart / step) * step; t <= m_viewEnd + step * 1e-9; t += step) {
        const int x = int(std::lround(xAt(t)));
        p.setPen(grid);
        p.drawLine(x, plot.bottom() + 1, x, plot.bottom() + 5);
        const QString label = formatTime(t, step);
        const int w = fm.horizontalAdvance(label);
        const int lx = std::clamp(x - w / 2, plot.left() - m_leftMargin / 2, width() - w - 2);
        p.setPen(ink);
        p.drawText(QPoint(lx, plot.bottom() + 6 + fm.ascent()), label);
    }
}

QColor PipelineTimeline::idleColor(bool alternate) const {
    const QColor base = palette().color(QPalette::Base);
    const QColor idle = QColor::fromRgbF(base.redF() * 0.9 + 0.1, base.greenF() * 0.86, base.blueF() * 0.86);
    return alternate ? idle.darker(106) : idle;
}

void PipelineTimeline::forEachFill(const std::function<void(const QRect&, QRgb)>& fill) const {
    const QRect plot = plotRect();
    // Idle: the step's window in a warm tint, alternate stages a shade apart.
    const int wx0 = std::max(plot.left(), int(std::floor(xAt(0))));
    const int wx1 = std::min(plot.right() + 1, int(std::ceil(xAt(m_duration))));
    const QRgb idle = idleColor(false).rgba(), idleAlt = idleColor(true).rgba();
    std::array<QRgb, KindCount> colors, lighter;
    for (int k = 0; k < KindCount; ++k) {
        colors[size_t(k)] = kindColor(Kind(k)).rgba();
        lighter[size_t(k)] = laterChunkColor(Kind(k)).rgba();
    }
    int stageIndex = -1;
    for (size_t i = 0; i < m_rows.size(); ++i) {
        if (m_rows[i].firstOfStage) ++stageIndex;
        const PixelRow& px = m_pixels[i];
        fill(QRect(wx0, px.band.top(), std::max(0, wx1 - wx0), px.band.height()), stageIndex % 2 ? idleAlt : idle);
        for (int k = 0; k < KindCount; ++k) {
            const QVector<QRect>& rects = px.rects[size_t(k)];
            const QVector<bool>& later = px.laterChunk[size_t(k)];
            for (int j = 0; j < rects.size(); ++j) fill(rects[j], later[j] ? lighter[size_t(k)] : colors[size_t(k)]);
        }
    }
    // Stage boundaries when stages have several rank rows.
    if (m_showAllRanks && int(m_rows.size()) > m_stageCount) {
        const QRgb line = palette().color(QPalette::Mid).rgba();
        for (size_t i = 1; i < m_rows.size(); ++i)
            if (m_rows[i].firstOfStage) fill(QRect(plot.left(), m_pixels[i].band.top(), plot.width(), 1), line);
    }
}

// The plot's background and bars, written straight into an image: the raster engine's per-rectangle
// cost dominates with tens of thousands of bars, while plain row fills cost only the pixels covered.
void PipelineTimeline::renderLayer(qreal dpr) {
    m_layerDirty = false;
    const QRect plot = plotRect();
    const QSize size = plot.size() * dpr;
    if (m_layer.size() != size || m_layer.format() != QImage::Format_ARGB32_Premultiplied)
        m_layer = QImage(size, QImage::Format_ARGB32_Premultiplied);
    m_layer.setDevicePixelRatio(dpr);
    m_layer.fill(palette().color(QPalette::Base));
    const int imageW = m_layer.width(), imageH = m_layer.height();
    uchar* bits = m_layer.bits();
    const qsizetype stride = m_layer.bytesPerLine();
    // A rectangle in widget coordinates, filled in device pixels.
    forEachFill([&](const QRect& r, QRgb color) {
        const int x0 = std::max(0, int(std::lround((r.left() - plot.left()) * dpr)));
        const int x1 = std::min(imageW, int(std::lround((r.left() + r.width() - plot.left()) * dpr)));
        const int y0 = std::max(0, int(std::lround((r.top() - plot.top()) * dpr)));
        const int y1 = std::min(imageH, int(std::lround((r.top() + r.height() - plot.top()) * dpr)));
        for (int y = y0; y < y1; ++y) {
            auto* line = reinterpret_cast<QRgb*>(bits + y * stride);
            std::fill(line + x0, line + std::max(x0, x1), color);
        }
    });
}

void PipelineTimeline::paintEvent(QPaintEvent* event) {
    QPainter p(this);
    const QRect exposed = event->rect();
    p.fillRect(exposed, palette().color(QPalette::Window));
    const QRect plot = plotRect();
    p.setFont(font());
    if (exposed.top() < m_topMargin) paintLegend(p);
    if (m_rows.empty()) {
        p.fillRect(plot, palette().color(QPalette::Base));
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(plot, Qt::AlignCenter | Qt::TextWordWrap, m_placeholder);
        return;
    }
    ensureGeometry();
    paintGutter(p, plot, exposed);
    if (exposed.bottom() > plot.bottom()) paintAxis(p, plot);

    const QRect clip = plot.intersected(exposed);
    if (clip.isEmpty()) return;
    p.setClipRect(clip);
    if (m_vectorPaint) {
        // An SVG export: every bar a rectangle of its own.
        p.fillRect(plot, palette().color(QPalette::Base));
        forEachFill([&p](const QRect& r, QRgb color) { p.fillRect(r, QColor::fromRgba(color)); });
    } else {
        const qreal dpr = devicePixelRatioF();
        if (m_layerDirty || m_layer.devicePixelRatio() != dpr || m_layer.size() != plot.size() * dpr) renderLayer(dpr);
        // Only the exposed part of the layer is copied.
        const QRect from = clip.translated(-plot.topLeft());
        p.drawImage(clip, m_layer,
                    QRectF(from.x() * dpr, from.y() * dpr, from.width() * dpr, from.height() * dpr));
    }

    // Micro-batch numbers inside bars that have room for them.
    const double rowH = rowHeight();
    if (rowH - 2 >= m_barTextHeight) {
        p.setFont(m_barFont);
        p.setPen(Qt::white);
        const QFontMetrics fm(m_barFont);
        for (size_t i = 0; i < m_rows.size(); ++i) {
            const PixelRow& px = m_pixels[i];
            if (px.band.bottom() < clip.top() || px.band.top() > clip.bottom()) continue;
            for (int k : {Forward, Backward, Weight}) {
                const QVector<QRect>& rects = px.rects[size_t(k)];
                const QVector<int>& micro = px.micro[size_t(k)];
                for (int j = 0; j < rects.size(); ++j) {
                    const QRect& r = rects[j];
                    if (micro[j] < 0 || r.width() < 12 || r.right() < clip.left() || r.left() > clip.right()) continue;
                    const QStaticText& text = microText(micro[j]);
                    const int w = m_microTextWidths[size_t(micro[j])];
                    if (w + 4 > r.width()) continue;
                    const double th = text.size().height();
                    p.drawStaticText(QPointF(r.left() + (r.width() - w) / 2.0, r.top() + (r.height() - th) / 2.0), text);
                }
            }
        }
    }

    if (m_highlight >= 0) {
        QVector<QRect> outlines;
        for (size_t i = 0; i < m_rows.size(); ++i) {
            const PixelRow& px = m_pixels[i];
            if (px.band.bottom() < clip.top() || px.band.top() > clip.bottom()) continue;
            for (int k : {Forward, Backward, Weight}) {
                const QVector<QRect>& rects = px.rects[size_t(k)];
                for (int j = 0; j < rects.size(); ++j)
                    if (px.micro[size_t(k)][j] == m_highlight) outlines.append(rects[j].adjusted(0, 0, -1, -1));
            }
        }
        p.setBrush(Qt::NoBrush);
        p.setPen(QPen(palette().color(QPalette::WindowText), 1));
        p.drawRects(outlines);
    }
}

// --- interaction

bool PipelineTimeline::event(QEvent* event) {
    if (event->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(event);
        if (const std::optional<int> span = spanAt(help->pos())) {
            QToolTip::showText(help->globalPos(), toolTipFor(*span), this);
        } else {
            QToolTip::hideText();
            event->ignore();
        }
        return true;
    }
    return QWidget::event(event);
}

void PipelineTimeline::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    m_geometryDirty = true;
}

void PipelineTimeline::changeEvent(QEvent* event) {
    if (event->type() == QEvent::FontChange) {
        layoutMargins();
        invalidateGeometry();
    } else if (event->type() == QEvent::PaletteChange) {
        m_layerDirty = true;
        update();
    }
    QWidget::changeEvent(event);
}

void PipelineTimeline::wheelEvent(QWheelEvent* event) {
    if (m_rows.empty()) return;
    const QPoint delta = event->angleDelta();
    const double range = m_viewEnd - m_viewStart;
    if (delta.x() != 0 || (event->modifiers() & Qt::ShiftModifier)) {
        const int d = delta.x() != 0 ? delta.x() : delta.y();
        pan(-double(d) / 120.0 * range * 0.1);
    } else if (delta.y() != 0) {
        zoom(std::pow(kWheelZoom, double(delta.y()) / 120.0), timeAt(event->position().x()));
    }
    event->accept();
}

void PipelineTimeline::mousePressEvent(QMouseEvent* event) {
    if (event->button() == Qt::LeftButton && !m_rows.empty()) {
        m_dragging = true;
        m_dragFrom = event->pos();
        m_dragViewStart = m_viewStart;
        setCursor(Qt::ClosedHandCursor);
        event->accept();
        return;
    }
    QWidget::mousePressEvent(event);
}

void PipelineTimeline::mouseMoveEvent(QMouseEvent* event) {
    if (m_dragging) {
        const double perPixel = (m_viewEnd - m_viewStart) / double(plotRect().width());
        const double start = m_dragViewStart - double(event->pos().x() - m_dragFrom.x()) * perPixel;
        setView(start, start + (m_viewEnd - m_viewStart));
        return;
    }
    const std::optional<int> span = spanAt(event->pos());
    int micro = -1;
    if (span && kindOf(m_spans[size_t(*span)].kind) != Comm) micro = m_spans[size_t(*span)].microbatch;
    setHighlightedMicrobatch(micro);
}

void PipelineTimeline::mouseReleaseEvent(QMouseEvent* event) {
    if (m_dragging && event->button() == Qt::LeftButton) {
        m_dragging = false;
        unsetCursor();
        return;
    }
    QWidget::mouseReleaseEvent(event);
}

void PipelineTimeline::mouseDoubleClickEvent(QMouseEvent* event) {
    if (event->button() == Qt::LeftButton) resetView();
}

void PipelineTimeline::leaveEvent(QEvent* event) {
    setHighlightedMicrobatch(-1);
    QWidget::leaveEvent(event);
}

} // namespace parallax

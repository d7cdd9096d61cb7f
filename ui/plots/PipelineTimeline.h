#pragma once

#include "core/telemetry/Events.h"
#include "ui/plots/PlotExport.h"

#include <QColor>
#include <QImage>
#include <QRect>
#include <QStaticText>
#include <QString>
#include <QVector>
#include <QWidget>

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

class QPainter;

namespace parallax {

// One step of a pipeline as it ran: a row per stage (a sub-row per rank when a stage has several
// tensor/data-parallel ranks), time across. Forwards, backwards and weight-gradient passes are
// full-height bars in their own colors (a lighter shade for the odd model chunks of an interleaved
// schedule), blocking receives and the send drain a thin gray band,
// and idle time is the tinted background between them; the micro-batch number is drawn inside
// bars wide enough for it. Hovering a bar outlines its micro-batch on every stage and shows its
// kind, stage, rank, micro-batch and duration. The wheel zooms the time axis about the cursor,
// dragging pans it, a double-click shows the whole step again.
//
// Drawing scales to tens of thousands of bars: the spans are sorted into rows once per step; the
// pixel rectangles of what is visible are computed once per view and size and filled into an image
// of the plot, of which a repaint copies only the exposed part; numbers, outlines and axes are
// drawn over it for the exposed rows.
//
// A right click exports the step as PNG, SVG (a rectangle per bar) or CSV (a row per span).
class PipelineTimeline : public QWidget {
    Q_OBJECT
public:
    enum Kind : uint8_t { Forward, Backward, Weight, Comm, KindCount };

    explicit PipelineTimeline(QWidget* parent = nullptr);
    ~PipelineTimeline() override;

    // The spans of one step (kinds other than F, B, W, recv and send are not drawn). Keeps the
    // zoom when `keepView` and the new step is at least as long; otherwise shows it all.
    void setSpans(const std::vector<SpanEvent>& spans, bool keepView = false);
    void clear();
    const std::vector<SpanEvent>& spans() const { return m_spans; }
    // Shown in place of the timeline when there are no spans.
    void setPlaceholderText(const QString& text);
    QString placeholderText() const { return m_placeholder; }

    int rowCount() const { return static_cast<int>(m_rows.size()); }
    int barCount() const { return m_barCount; }
    int stageCount() const { return m_stageCount; }
    // Rows that have several ranks of one stage are drawn; off: one row per stage, its first rank.
    void setShowAllRanks(bool on);
    bool showAllRanks() const { return m_showAllRanks; }

    // Seconds since the step's first span; the whole step is [0, duration()].
    double duration() const { return m_duration; }
    double viewStart() const { return m_viewStart; }
    double viewEnd() const { return m_viewEnd; }
    void setView(double start, double end); // clamped to the step, at least 1 us wide
    void resetView();
    // factor < 1 zooms in; `anchor` (seconds) stays where it is on screen.
    void zoom(double factor, double anchor);
    void pan(double seconds);

    // Geometry, for tests and tooltips.
    QRect plotRect() const;
    double timeAt(double x) const;
    double xAt(double seconds) const;
    // The bar under `pos`: an index into spans(), or none.
    std::optional<int> spanAt(const QPoint& pos) const;
    // Which of its micro-batch's passes on that rank the span is (0-based; backwards count down
    // from the last chunk, as the interleaved schedule runs them), and how many there are.
    int chunkOf(int span) const;
    int chunksOf(int span) const;
    QString toolTipFor(int span) const;
    // -1: none. Every bar of this micro-batch is outlined.
    void setHighlightedMicrobatch(int micro);
    int highlightedMicrobatch() const { return m_highlight; }

    // A row per drawn span: step, stage, rank, micro-batch, chunk, kind, start and end in ms since
    // the step's first span; by stage, rank, then start.
    PlotTable table() const;
    PlotExport* exporter() const { return m_export; }

    static QColor kindColor(Kind kind);
    // Passes of odd model chunks (interleaved schedule), so that neighbouring chunks differ.
    static QColor laterChunkColor(Kind kind);

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

signals:
    void viewChanged(double start, double end);

protected:
    bool event(QEvent* event) override;
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void changeEvent(QEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;

private:
    struct Bar {
        double start = 0; // seconds since the step's first span
        double end = 0;
        int micro = 0;
        int span = 0;     // index into m_spans
        Kind kind = Forward;
    };
    struct Row {
        int stage = 0;
        int rank = 0;
        int ranksInStage = 1;
        bool firstOfStage = true;
        std::vector<Bar> compute; // by start
        std::vector<Bar> comm;    // by start
        double longestCompute = 0;
        double longestComm = 0;
    };
    // What one row looks like at the current view and size.
    struct PixelRow {
        QRect band;
        std::array<QVector<QRect>, KindCount> rects;
        std::array<QVector<int>, KindCount> micro;
        std::array<QVector<bool>, KindCount> laterChunk; // an odd chunk: drawn lighter
    };

    void buildRows();
    void invalidateGeometry();
    void ensureGeometry();
    void renderLayer(qreal dpr);
    // Every background and bar rectangle of the current geometry with its colour, in drawing order.
    void forEachFill(const std::function<void(const QRect&, QRgb)>& fill) const;
    QColor idleColor(bool alternate) const;
    void layoutMargins();
    int rowAtY(int y) const;
    double rowHeight() const;
    void paintAxis(QPainter& p, const QRect& plot);
    void paintLegend(QPainter& p);
    void paintGutter(QPainter& p, const QRect& plot, const QRect& exposed);
    const QStaticText& microText(int micro);

    std::vector<SpanEvent> m_spans;
    std::vector<int> m_chunk;  // per span
    std::vector<int> m_chunks; // per span
    std::vector<Row> m_rows;
    int m_barCount = 0;
    int m_stageCount = 0;
    bool m_showAllRanks = true;
    double m_duration = 0;
    double m_viewStart = 0;
    double m_viewEnd = 0;
    QString m_placeholder;
    int m_highlight = -1;

    bool m_geometryDirty = true;
    std::vector<PixelRow> m_pixels;
    // The plot's background and bars at the current view, size and palette, in device pixels.
    QImage m_layer;
    bool m_layerDirty = true;
    int m_leftMargin = 60;
    int m_topMargin = 22;
    int m_bottomMargin = 26;
    QFont m_barFont;
    int m_barTextHeight = 10;
    std::vector<QStaticText> m_microTexts;
    std::vector<int> m_microTextWidths;

    PlotExport* m_export = nullptr;
    bool m_vectorPaint = false; // painting for an SVG export

    bool m_dragging = false;
    QPoint m_dragFrom;
    double m_dragViewStart = 0;
};

} // namespace parallax

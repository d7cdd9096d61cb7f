#pragma once

#include <QColor>
#include <QRectF>
#include <QWidget>

#include <cstdint>

namespace parallax {

// The ranks of a dp x tp x pp layout: one row per pipeline stage (cells colored by stage), the
// data-parallel replicas of a stage side by side, each replica's tensor-parallel group outlined.
// Ranks are numbered tp fastest, then dp, then pp, as the trainer builds its process groups.
class DeviceGridDiagram : public QWidget {
    Q_OBJECT
public:
    // Past this many ranks the cells would be too small to read; the diagram says so instead.
    static constexpr int64_t kMaxDrawnRanks = 4096;

    struct Coordinates {
        int64_t dp = 0;
        int64_t tp = 0;
        int64_t pp = 0;
    };

    explicit DeviceGridDiagram(QWidget* parent = nullptr);

    void setLayout(int64_t dp, int64_t tp, int64_t pp);
    int64_t dp() const { return m_dp; }
    int64_t tp() const { return m_tp; }
    int64_t pp() const { return m_pp; }

    static int64_t rankOf(const Coordinates& c, int64_t dp, int64_t tp);
    static Coordinates coordinatesOf(int64_t rank, int64_t dp, int64_t tp);
    static QColor stageColor(int64_t stage);
    // Where the cell of `rank` is drawn at the current size (empty when not drawn).
    QRectF cellRect(int64_t rank) const;
    int64_t rankAt(const QPointF& pos) const; // -1 when none

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;
    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;

protected:
    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override;

private:
    struct Geometry {
        double cell = 0;      // cell side
        double groupGap = 0;  // between tp groups (dp replicas)
        double rowGap = 0;    // between stages
        double left = 0;      // room for the stage labels
        double top = 0;
    };
    Geometry geometry(int width) const;
    bool drawable() const;

    int64_t m_dp = 1;
    int64_t m_tp = 1;
    int64_t m_pp = 1;
};

} // namespace parallax

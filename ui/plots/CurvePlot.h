#pragma once

#include "ui/models/MetricSeries.h"
#include "ui/models/MetricSeriesTypes.h"
#include "ui/plots/PlotExport.h"

#include <QColor>
#include <QElapsedTimer>
#include <QPoint>
#include <QString>
#include <QStringList>
#include <QTimer>
#include <QWidget>

#include <memory>
#include <vector>

class QCustomPlot;
class QCPGraph;
class QMouseEvent;
class QShowEvent;
class QWheelEvent;

namespace parallax {

// A line plot of named MetricSeries (raw and smoothed channels, several runs...). It never draws
// the full series: before every replot it asks each series for the decimated points of the
// visible x range at the plot's pixel width, so panning and zooming stay fast on millions of
// points while every spike stays visible.
//
// Mouse: drag pans and the wheel zooms the x axis; with Shift held they act on the y axis
// instead (which stops the y axis from fitting the data); a double click fits everything again.
// While the view shows the newest data ("follow", the default), new points extend it; panning or
// zooming turns follow off and emits userRangeChanged (pages link several plots through it).
//
// Appending data only marks the plot dirty (dataChanged()); a timer redraws at most every
// kRedrawIntervalMs, so a burst of samples costs one redraw.
//
// The legend sits in a row of its own above the axes, never over the data, in as many lines as the
// width needs (LegendLayout); a name too long for the plot is elided there. A right click offers
// PNG, SVG and CSV export and copying the image (exporter()).
class CurvePlot : public QWidget {
    Q_OBJECT
public:
    static constexpr int kRedrawIntervalMs = 40;

    explicit CurvePlot(QWidget* parent = nullptr);
    ~CurvePlot() override;

    // Returns the curve's id. The plot shares the series: append to it, then call dataChanged().
    // A curve out of the legend (a faint raw curve under its smoothed one) still draws and exports.
    int addCurve(const QString& name, std::shared_ptr<const MetricSeries> series,
                 MetricChannel channel, const QColor& color, double width = 1.5, bool inLegend = true);
    void removeCurve(int id);
    void clearCurves();
    void setCurveVisible(int id, bool visible);
    // Qt::DashLine for a reference line.
    void setCurvePenStyle(int id, Qt::PenStyle style);
    int curveCount() const { return static_cast<int>(m_curves.size()); }
    // In the order added.
    QStringList curveNames() const;
    // The pen colour of the curve named `name`; invalid when there is none.
    QColor curveColor(const QString& name) const;

    void setTitle(const QString& title);
    void setValueLabel(const QString& label);
    void setLegendVisible(bool visible);
    // The names the legend shows, in its order, as of the last replot (curves out of the legend
    // and hidden ones left out; a name too long for the plot elided in the middle).
    QStringList legendNames() const;

    void setAxis(MetricAxis axis); // refits the x range
    MetricAxis axis() const { return m_axis; }
    void setLogScale(bool on);
    bool logScale() const { return m_logScale; }

    // Shows x in [lo, hi] (in the current axis' units) and stops following.
    void setXRange(double lo, double hi);
    double xLower() const;
    double xUpper() const;
    void setFollow(bool on);
    bool follow() const { return m_follow; }
    // Fits both axes to all data and follows again.
    void resetView();

    // New points were appended to a series: redraw soon (coalesced).
    void dataChanged();
    // Decimates for the current range and renders now (benchmarks, screenshots).
    void replotNow();

    // The tooltip at data coordinate `x` of the current axis: the step of the nearest point, then
    // each visible curve's value at that point, or that it has none there.
    QString hoverText(double x) const;

    // Every visible curve at full fidelity: the x of the current axis, then a column per curve
    // (empty where a curve has no point at that x).
    PlotTable table() const;
    PlotExport* exporter() const { return m_export; }

    QCustomPlot* customPlot() const { return m_plot; }
    // Points handed to the plot by the last decimation, over all curves.
    size_t drawnPoints() const { return m_drawnPoints; }
    int replotCount() const { return m_replots; }

signals:
    // The user panned or zoomed the x axis (not emitted for setXRange()).
    void userRangeChanged(double lo, double hi);
    // The user double-clicked to fit everything again.
    void viewReset();
    // A left click that did not drag, at data coordinate `x` of the current axis.
    void clicked(double x);

protected:
    void showEvent(QShowEvent* event) override;

private:
    struct Curve {
        int id = 0;
        QString name;
        std::shared_ptr<const MetricSeries> series;
        MetricChannel channel = MetricChannel::Raw;
        QCPGraph* graph = nullptr;
        bool visible = true;
        bool inLegend = true;
    };

    void beforeReplot();      // decimates every visible curve for the current view
    void scheduleRedraw();
    void redrawNow();
    void fitX();
    void fitY();
    void onMousePress(QMouseEvent* event);
    void onMouseWheel(QWheelEvent* event);
    void onMouseMove(QMouseEvent* event);
    void onXRangeChanged();
    bool dataXBounds(double& lo, double& hi) const;
    int plotPixels() const;
    void applyAxisLabels();
    void placeLegend();
    void wrapLegend();

    QCustomPlot* m_plot = nullptr;
    PlotExport* m_export = nullptr;
    bool m_legendVisible = false;
    std::vector<Curve> m_curves;
    int m_nextId = 1;
    MetricAxis m_axis = MetricAxis::Step;
    bool m_logScale = false;
    bool m_follow = true;
    bool m_fitY = true;
    bool m_settingRange = false; // the range change comes from code, not the user
    QPoint m_pressAt;            // where the left button went down; a release near it is a click
    bool m_dirty = false;        // data changed since the last replot
    QString m_valueLabel;
    DecimatedPoints m_scratch;
    QTimer m_redrawTimer;
    QElapsedTimer m_sinceReplot;
    size_t m_drawnPoints = 0;
    int m_replots = 0;
};

} // namespace parallax

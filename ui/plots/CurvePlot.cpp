#include "ui/plots/CurvePlot.h"

#include "ui/plots/LegendLayout.h"

#include <qcustomplot.h>

#include <QApplication>
#include <QLocale>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace parallax {

namespace {

// Lets `flag` say "this change comes from code" for the duration of a scope.
class FlagGuard {
public:
    explicit FlagGuard(bool& flag) : m_flag(flag), m_old(flag) { m_flag = true; }
    ~FlagGuard() { m_flag = m_old; }

private:
    bool& m_flag;
    bool m_old;
};

QString axisTitle(MetricAxis axis) {
    switch (axis) {
    case MetricAxis::Step:
        return QObject::tr("step");
    case MetricAxis::Time:
        return QObject::tr("elapsed (h:m:s)");
    case MetricAxis::Tokens:
        return QObject::tr("tokens");
    }
    return QString();
}

} // namespace

CurvePlot::CurvePlot(QWidget* parent) : QWidget(parent), m_plot(new QCustomPlot(this)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    setMinimumSize(200, 140);

    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    m_plot->axisRect()->setRangeDrag(Qt::Horizontal);
    m_plot->axisRect()->setRangeZoom(Qt::Horizontal);
    m_plot->setNoAntialiasingOnDrag(true);
    m_plot->setPlottingHint(QCP::phCacheLabels, true);
    m_plot->setPlottingHint(QCP::phFastPolylines, true);
    // The legend leaves the axis rect's inset layout for a row of the plot layout (placeLegend()):
    // over the axes it would hide the points under it.
    m_plot->axisRect()->insetLayout()->take(m_plot->legend);
    m_plot->axisRect()->insetLayout()->simplify();
    m_plot->legend->setVisible(false);
    m_plot->legend->setBorderPen(Qt::NoPen);
    m_plot->legend->setBrush(Qt::NoBrush);
    m_plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    m_plot->legend->setMargins(QMargins(4, 0, 4, 0));
    m_plot->xAxis->setNumberFormat(QStringLiteral("gb"));
    m_plot->yAxis->setNumberFormat(QStringLiteral("gb"));
    applyAxisLabels();

    connect(m_plot, &QCustomPlot::beforeReplot, this, &CurvePlot::beforeReplot);
    connect(m_plot, &QCustomPlot::afterReplot, this, [this] {
        ++m_replots;
        m_dirty = false;
        m_sinceReplot.start();
    });
    connect(m_plot, &QCustomPlot::mousePress, this, &CurvePlot::onMousePress);
    connect(m_plot, &QCustomPlot::mouseRelease, this, [this](QMouseEvent* event) {
        if (event->button() != Qt::LeftButton) return;
        if ((event->pos() - m_pressAt).manhattanLength() > QApplication::startDragDistance()) return;
        emit clicked(m_plot->xAxis->pixelToCoord(event->position().x()));
    });
    connect(m_plot, &QCustomPlot::mouseWheel, this, &CurvePlot::onMouseWheel);
    connect(m_plot, &QCustomPlot::mouseMove, this, &CurvePlot::onMouseMove);
    connect(m_plot, &QCustomPlot::mouseDoubleClick, this, [this](QMouseEvent*) {
        resetView();
        emit viewReset();
    });
    connect(m_plot->xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
            &CurvePlot::onXRangeChanged);
    connect(m_plot->yAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, [this] {
        if (!m_settingRange) m_fitY = false;
    });

    m_redrawTimer.setSingleShot(true);
    connect(&m_redrawTimer, &QTimer::timeout, this, &CurvePlot::redrawNow);

    m_export = PlotExport::forCustomPlot(m_plot, [this] { return table(); });
    // Exports draw what the curves hold now, decimated for the current view.
    m_export->setPrepare([this] { replotNow(); });
}

CurvePlot::~CurvePlot() = default;

int CurvePlot::addCurve(const QString& name, std::shared_ptr<const MetricSeries> series,
                        MetricChannel channel, const QColor& color, double width, bool inLegend) {
    Curve c;
    c.id = m_nextId++;
    c.name = name;
    c.series = std::move(series);
    c.channel = channel;
    c.inLegend = inLegend;
    c.graph = m_plot->addGraph();
    c.graph->setName(name);
    c.graph->setPen(QPen(color, width));
    if (!inLegend) c.graph->removeFromLegend();
    // Decimation already leaves about two points per pixel column; QCustomPlot need not sample.
    c.graph->setAdaptiveSampling(false);
    m_curves.push_back(std::move(c));
    scheduleRedraw();
    return m_curves.back().id;
}

void CurvePlot::removeCurve(int id) {
    auto it = std::find_if(m_curves.begin(), m_curves.end(), [id](const Curve& c) { return c.id == id; });
    if (it == m_curves.end()) return;
    m_plot->removeGraph(it->graph);
    m_curves.erase(it);
    scheduleRedraw();
}

void CurvePlot::clearCurves() {
    m_plot->clearGraphs();
    m_curves.clear();
    scheduleRedraw();
}

void CurvePlot::setCurveVisible(int id, bool visible) {
    for (Curve& c : m_curves) {
        if (c.id != id) continue;
        c.visible = visible;
        c.graph->setVisible(visible);
        c.graph->removeFromLegend();
        if (visible && c.inLegend) c.graph->addToLegend();
    }
    scheduleRedraw();
}

void CurvePlot::setCurvePenStyle(int id, Qt::PenStyle style) {
    for (Curve& c : m_curves) {
        if (c.id != id) continue;
        QPen pen = c.graph->pen();
        pen.setStyle(style);
        c.graph->setPen(pen);
    }
    scheduleRedraw();
}

QStringList CurvePlot::curveNames() const {
    QStringList out;
    for (const Curve& c : m_curves) out << c.name;
    return out;
}

QColor CurvePlot::curveColor(const QString& name) const {
    for (const Curve& c : m_curves)
        if (c.name == name) return c.graph->pen().color();
    return {};
}

void CurvePlot::setTitle(const QString& title) {
    QCPTextElement* element = nullptr;
    if (m_plot->plotLayout()->rowCount() > 1) {
        element = qobject_cast<QCPTextElement*>(m_plot->plotLayout()->element(0, 0));
    }
    if (!element) {
        m_plot->plotLayout()->insertRow(0);
        element = new QCPTextElement(m_plot, title, QFont(font().family(), font().pointSize(), QFont::Bold));
        m_plot->plotLayout()->addElement(0, 0, element);
    }
    element->setText(title);
    scheduleRedraw();
}

void CurvePlot::setValueLabel(const QString& label) {
    m_valueLabel = label;
    applyAxisLabels();
    scheduleRedraw();
}

void CurvePlot::setLegendVisible(bool visible) {
    m_legendVisible = visible;
    placeLegend();
    scheduleRedraw();
}

void CurvePlot::placeLegend() {
    QCPLayoutGrid* layout = m_plot->plotLayout();
    QCPLegend* legend = m_plot->legend;
    bool placed = false;
    for (int i = 0; i < layout->elementCount(); ++i) placed = placed || layout->elementAt(i) == legend;
    legend->setVisible(m_legendVisible);
    if (m_legendVisible == placed) return;
    if (!m_legendVisible) {
        layout->take(legend);
        layout->simplify();
        return;
    }
    // The row right above the axis rect (under the title, when there is one).
    int axisRow = 0;
    for (int r = 0; r < layout->rowCount(); ++r)
        if (layout->element(r, 0) == m_plot->axisRect()) axisRow = r;
    layout->insertRow(axisRow);
    layout->addElement(axisRow, 0, legend);
    layout->setRowStretchFactor(axisRow, 0.001);
}

void CurvePlot::wrapLegend() {
    if (!m_legendVisible) return;
    // Items show the curves' names; one too long for the plot is elided there, never elsewhere.
    LegendLayout::fit(*m_plot->legend, m_plot->width(), [this](const QCPAbstractPlottable* plottable) {
        for (const Curve& c : m_curves)
            if (c.graph == plottable) return c.name;
        return QString();
    });
}

QStringList CurvePlot::legendNames() const {
    QStringList out;
    for (QCPAbstractLegendItem* item : LegendLayout::items(*m_plot->legend))
        if (auto* named = qobject_cast<QCPPlottableLegendItem*>(item)) out << named->plottable()->name();
    return out;
}

void CurvePlot::applyAxisLabels() {
    m_plot->xAxis->setLabel(axisTitle(m_axis));
    m_plot->yAxis->setLabel(m_valueLabel);
    if (m_axis == MetricAxis::Time) {
        auto ticker = QSharedPointer<QCPAxisTickerTime>::create();
        ticker->setTimeFormat(QStringLiteral("%h:%m:%s"));
        m_plot->xAxis->setTicker(ticker);
    } else {
        m_plot->xAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
    }
}

void CurvePlot::setAxis(MetricAxis axis) {
    if (axis == m_axis) return;
    m_axis = axis;
    applyAxisLabels();
    resetView();
}

void CurvePlot::setLogScale(bool on) {
    if (on == m_logScale) return;
    m_logScale = on;
    FlagGuard guard(m_settingRange);
    if (on) {
        m_plot->yAxis->setScaleType(QCPAxis::stLogarithmic);
        m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
    } else {
        m_plot->yAxis->setScaleType(QCPAxis::stLinear);
        m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
    }
    m_fitY = true;
    scheduleRedraw();
}

double CurvePlot::xLower() const { return m_plot->xAxis->range().lower; }
double CurvePlot::xUpper() const { return m_plot->xAxis->range().upper; }

void CurvePlot::setXRange(double lo, double hi) {
    if (!(hi > lo)) return;
    m_follow = false;
    {
        FlagGuard guard(m_settingRange);
        m_plot->xAxis->setRange(lo, hi);
    }
    scheduleRedraw();
}

void CurvePlot::setFollow(bool on) {
    m_follow = on;
    if (on) scheduleRedraw();
}

void CurvePlot::resetView() {
    m_follow = true;
    m_fitY = true;
    scheduleRedraw();
}

void CurvePlot::dataChanged() { scheduleRedraw(); }

void CurvePlot::scheduleRedraw() {
    m_dirty = true;
    if (m_redrawTimer.isActive()) return;
    // At most one redraw per interval however fast data arrives; the first one soon.
    const qint64 since = m_sinceReplot.isValid() ? m_sinceReplot.elapsed() : kRedrawIntervalMs;
    m_redrawTimer.start(static_cast<int>(std::max<qint64>(0, kRedrawIntervalMs - since)));
}

void CurvePlot::redrawNow() {
    // A hidden plot (another page is shown) redraws when it is shown again.
    if (!isVisible()) return;
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void CurvePlot::replotNow() { m_plot->replot(QCustomPlot::rpImmediateRefresh); }

void CurvePlot::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (m_dirty) scheduleRedraw();
}

int CurvePlot::plotPixels() const { return std::max(16, m_plot->axisRect()->width()); }

bool CurvePlot::dataXBounds(double& lo, double& hi) const {
    bool any = false;
    for (const Curve& c : m_curves) {
        if (!c.visible) continue;
        const auto b = c.series->xBounds(m_axis);
        if (!b) continue;
        lo = any ? std::min(lo, b->first) : b->first;
        hi = any ? std::max(hi, b->second) : b->second;
        any = true;
    }
    return any;
}

void CurvePlot::fitX() {
    double lo = 0, hi = 1;
    // No data (a run that has not stepped yet): the empty default, not the last run's range.
    if (!dataXBounds(lo, hi)) lo = 0, hi = 1;
    if (hi <= lo) {
        lo -= 0.5;
        hi += 0.5;
    }
    FlagGuard guard(m_settingRange);
    m_plot->xAxis->setRange(lo, hi);
}

void CurvePlot::beforeReplot() {
    wrapLegend();
    if (m_follow) fitX();
    const QCPRange range = m_plot->xAxis->range();
    const int pixels = plotPixels();
    double yLo = std::numeric_limits<double>::infinity();
    double yHi = -std::numeric_limits<double>::infinity();
    m_drawnPoints = 0;
    QVector<QCPGraphData> points;
    for (Curve& c : m_curves) {
        if (!c.visible) {
            c.graph->data()->clear();
            continue;
        }
        c.series->decimate(c.channel, m_axis, range.lower, range.upper, pixels, m_scratch);
        points.resize(static_cast<int>(m_scratch.size()));
        for (size_t i = 0; i < m_scratch.size(); ++i) {
            const double y = m_scratch.y[i];
            points[static_cast<int>(i)] = QCPGraphData(m_scratch.x[i], y);
            // The y fit looks at the visible points only, not the neighbours beyond the edges.
            const double x = m_scratch.x[i];
            if (x < range.lower || x > range.upper || !std::isfinite(y)) continue;
            if (m_logScale && y <= 0) continue;
            yLo = std::min(yLo, y);
            yHi = std::max(yHi, y);
        }
        c.graph->data()->set(points, true);
        m_drawnPoints += m_scratch.size();
    }
    if (m_fitY && yLo > yHi && m_drawnPoints == 0) {
        yLo = m_logScale ? 1 : 0; // nothing to fit: the empty default
        yHi = m_logScale ? 10 : 1;
    }
    if (m_fitY && yLo <= yHi) {
        double lo = yLo, hi = yHi;
        if (m_logScale) {
            lo /= 1.2;
            hi *= 1.2;
        } else {
            const double pad = hi > lo ? (hi - lo) * 0.05 : std::max(std::abs(hi) * 0.05, 1e-12);
            lo -= pad;
            hi += pad;
        }
        FlagGuard guard(m_settingRange);
        m_plot->yAxis->setRange(lo, hi);
    }
}

void CurvePlot::onXRangeChanged() {
    if (m_settingRange) return;
    m_follow = false;
    const QCPRange r = m_plot->xAxis->range();
    emit userRangeChanged(r.lower, r.upper);
}

void CurvePlot::onMousePress(QMouseEvent* event) {
    if (event->button() == Qt::LeftButton) m_pressAt = event->pos();
    // Shift: the y axis; otherwise x (the y axis then keeps fitting the visible data).
    const Qt::Orientation o = (event->modifiers() & Qt::ShiftModifier) ? Qt::Vertical : Qt::Horizontal;
    m_plot->axisRect()->setRangeDrag(o);
}

void CurvePlot::onMouseWheel(QWheelEvent* event) {
    const Qt::Orientation o = (event->modifiers() & Qt::ShiftModifier) ? Qt::Vertical : Qt::Horizontal;
    m_plot->axisRect()->setRangeZoom(o);
}

void CurvePlot::onMouseMove(QMouseEvent* event) {
    if (event->buttons() != Qt::NoButton || m_curves.empty()) return;
    const QString text = hoverText(m_plot->xAxis->pixelToCoord(event->position().x()));
    if (!text.isEmpty()) QToolTip::showText(event->globalPosition().toPoint(), text, m_plot);
}

PlotTable CurvePlot::table() const {
    PlotTable out;
    switch (m_axis) {
    case MetricAxis::Step: out.header << QStringLiteral("step"); break;
    case MetricAxis::Time: out.header << QStringLiteral("elapsed_s"); break;
    case MetricAxis::Tokens: out.header << QStringLiteral("tokens"); break;
    }
    std::vector<const Curve*> shown;
    for (const Curve& c : m_curves)
        if (c.visible) shown.push_back(&c);
    // One row per x any curve has a point at; repeated x (a series holds its predecessor's x for a
    // point out of order) keep the later point.
    std::map<double, QStringList> rows;
    auto number = [](double v) { return QString::number(v, 'g', QLocale::FloatingPointShortest); };
    for (size_t k = 0; k < shown.size(); ++k) {
        out.header << shown[k]->name;
        const MetricSeries& s = *shown[k]->series;
        for (size_t i = 0; i < s.size(); ++i) {
            QStringList& row = rows[s.x(m_axis, i)];
            if (row.isEmpty())
                for (size_t j = 0; j < shown.size(); ++j) row << QString();
            const double v = s.at(shown[k]->channel, i);
            row[int(k)] = std::isfinite(v) ? number(v) : QString();
        }
    }
    out.rows.reserve(rows.size());
    for (auto& [x, cells] : rows) {
        cells.prepend(number(x));
        out.rows.push_back(std::move(cells));
    }
    return out;
}

QString CurvePlot::hoverText(double x) const {
    // The point under the cursor: of every curve's points, the one whose x is closest.
    const Curve* reference = nullptr;
    size_t referenceIndex = 0;
    double best = std::numeric_limits<double>::infinity();
    for (const Curve& c : m_curves) {
        if (!c.visible) continue;
        const auto i = c.series->nearest(m_axis, x);
        if (!i) continue;
        const double d = std::abs(c.series->x(m_axis, *i) - x);
        if (d < best) {
            best = d;
            reference = &c;
            referenceIndex = *i;
        }
    }
    if (!reference) return {};
    const double at = reference->series->x(m_axis, referenceIndex);
    const double step = reference->series->x(MetricAxis::Step, referenceIndex);
    QString text = tr("step %1").arg(step, 0, 'f', 0);
    if (m_axis == MetricAxis::Tokens) {
        text += tr(" · %1 tokens").arg(at, 0, 'g', 4);
    } else if (m_axis == MetricAxis::Time) {
        text += tr(" · %1 s").arg(at, 0, 'f', 1);
    }
    // A curve speaks only for a point at that x: on the step axis the same step; by time or tokens,
    // where runs never share an x exactly, one within a few pixels, with its own step. A curve
    // without one says so rather than showing its nearest point, which may be far away (a run
    // that starts later, one that ended earlier, a gap).
    const double pixel = std::abs(m_plot->xAxis->pixelToCoord(3.0) - m_plot->xAxis->pixelToCoord(0.0));
    const double tolerance = m_axis == MetricAxis::Step ? 0.0 : pixel;
    for (const Curve& c : m_curves) {
        if (!c.visible) continue;
        const auto i = c.series->nearest(m_axis, at);
        if (!i || std::abs(c.series->x(m_axis, *i) - at) > tolerance) {
            text += tr("\n%1: no point here").arg(c.name);
            continue;
        }
        text += QStringLiteral("\n%1: %2").arg(c.name).arg(c.series->at(c.channel, *i), 0, 'g', 5);
        const double own = c.series->x(MetricAxis::Step, *i);
        if (own != step) text += tr(" (step %1)").arg(own, 0, 'f', 0);
    }
    return text;
}

} // namespace parallax

#include "ui/plots/HeatMapPlot.h"

#include <qcustomplot.h>

#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

namespace parallax {

HeatMapPlot::HeatMapPlot(QWidget* parent) : QWidget(parent), m_plot(new QCustomPlot(this)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    setMinimumSize(200, 120);

    m_map = new QCPColorMap(m_plot->xAxis, m_plot->yAxis);
    m_scale = new QCPColorScale(m_plot);
    m_plot->plotLayout()->addElement(0, 1, m_scale);
    m_scale->setType(QCPAxis::atRight);
    m_scale->axis()->setLabel(tr("util %"));
    m_map->setColorScale(m_scale);
    QCPColorGradient gradient(QCPColorGradient::gpThermal);
    gradient.setNanHandling(QCPColorGradient::nhTransparent);
    m_map->setGradient(gradient);
    m_map->setInterpolate(false);
    m_map->setDataRange(QCPRange(0, 100));
    auto margins = new QCPMarginGroup(m_plot);
    m_plot->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
    m_scale->setMarginGroup(QCP::msBottom | QCP::msTop, margins);

    auto ticker = QSharedPointer<QCPAxisTickerTime>::create();
    ticker->setTimeFormat(QStringLiteral("%h:%m:%s"));
    ticker->setTickCount(3); // the map is narrow beside the grid; long labels would collide
    m_plot->xAxis->setTicker(ticker);
    m_plot->xAxis->setLabel(tr("elapsed (h:m:s)"));
    m_plot->yAxis->setRangeReversed(true); // rank 0 on top, as in the grid

    m_timer.setSingleShot(true);
    connect(&m_timer, &QTimer::timeout, this, [this] { rebuild(false); });
}

HeatMapPlot::~HeatMapPlot() = default;

void HeatMapPlot::setModel(DeviceGridModel* model) {
    if (m_model) disconnect(m_model, nullptr, this, nullptr);
    m_model = model;
    if (m_model) {
        connect(m_model, &QAbstractItemModel::dataChanged, this, &HeatMapPlot::scheduleRebuild);
        connect(m_model, &QAbstractItemModel::modelReset, this, &HeatMapPlot::scheduleRebuild);
    }
    scheduleRebuild();
}

void HeatMapPlot::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (m_dirty) scheduleRebuild();
}

void HeatMapPlot::scheduleRebuild() {
    m_dirty = true;
    if (m_timer.isActive()) return;
    const qint64 since = m_sinceRebuild.isValid() ? m_sinceRebuild.elapsed() : kRedrawIntervalMs;
    m_timer.start(static_cast<int>(std::max<qint64>(0, kRedrawIntervalMs - since)));
}

void HeatMapPlot::rebuildNow() {
    rebuild(true);
    m_plot->replot(QCustomPlot::rpImmediateRefresh);
}

void HeatMapPlot::rebuild(bool force) {
    if (!force && !isVisible()) return; // rebuilt when shown again (m_dirty stays set)
    m_dirty = false;
    m_sinceRebuild.start();
    const std::vector<DeviceGridModel::History> empty;
    const auto& histories = m_model ? m_model->histories() : empty;
    const int rows = static_cast<int>(histories.size());
    if (rows == 0) {
        m_map->data()->clear();
        m_plot->replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    const double t0 = m_model->firstTime();
    const double span = std::max(1.0, m_model->lastTime() - t0);
    const int columns = std::clamp(m_plot->axisRect()->width() / 3, 10, kMaxColumns);

    // Mean utilization per (rank, time bin); empty bins stay NaN (drawn transparent).
    std::vector<double> sum(static_cast<size_t>(rows * columns), 0.0);
    std::vector<int> count(sum.size(), 0);
    double top = 100;
    for (int r = 0; r < rows; ++r) {
        const auto& h = histories[static_cast<size_t>(r)];
        for (size_t i = 0; i < h.t.size(); ++i) {
            const double u = h.util[i];
            if (!std::isfinite(u)) continue;
            const int c = std::min(columns - 1, static_cast<int>((h.t[i] - t0) / span * columns));
            const size_t k = static_cast<size_t>(r * columns + std::max(0, c));
            sum[k] += u;
            ++count[k];
            top = std::max(top, u);
        }
    }
    QCPColorMapData* data = m_map->data();
    data->setSize(columns, rows);
    data->setRange(QCPRange(span / columns / 2, span - span / columns / 2), QCPRange(0, rows - 1));
    for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < columns; ++c) {
            const size_t k = static_cast<size_t>(r * columns + c);
            data->setCell(c, r, count[k] ? sum[k] / count[k] : std::numeric_limits<double>::quiet_NaN());
        }
    }
    // CPU ranks above one core widen the scale; a GPU run stays 0..100.
    m_map->setDataRange(QCPRange(0, m_model->isGpu() ? 100.0 : std::ceil(top / 100.0) * 100.0));
    m_scale->axis()->setLabel(m_model->isGpu() ? tr("GPU util %") : tr("CPU %"));

    if (rows <= 32) {
        auto ticker = QSharedPointer<QCPAxisTickerText>::create();
        for (int r = 0; r < rows; ++r) ticker->addTick(r, histories[static_cast<size_t>(r)].label);
        m_plot->yAxis->setTicker(ticker);
    } else {
        m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
        m_plot->yAxis->setLabel(tr("rank index"));
    }
    m_plot->xAxis->setRange(0, span);
    m_plot->yAxis->setRange(-0.5, rows - 0.5);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

} // namespace parallax

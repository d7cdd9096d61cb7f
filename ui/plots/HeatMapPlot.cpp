#include "ui/plots/HeatMapPlot.h"

#include "ui/plots/PlotExport.h"

#include "ui/models/RankActivityPalette.h"

#include <qcustomplot.h>

#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

namespace parallax {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One row of the map: the mean of the values in each column's range of x; a column between the
// row's first and last sample that none falls in holds the previous column's value (the sample
// lasts until the next one), so the row has no gaps. Columns before the row's first sample stay
// NaN, and so do those after its last unless `holdLast` (the sample is current, not stopped).
template <typename X, typename V>
std::vector<double> binRow(const std::vector<X>& xs, const std::vector<V>& values, double x0, double width,
                           int columns, double scale, bool holdLast = false) {
    std::vector<double> sum(static_cast<size_t>(columns), 0.0);
    std::vector<int> count(sum.size(), 0);
    int first = columns, last = -1;
    for (size_t i = 0; i < xs.size() && i < values.size(); ++i) {
        const double v = static_cast<double>(values[i]);
        if (!std::isfinite(v)) continue;
        const int c = std::clamp(static_cast<int>(std::floor((static_cast<double>(xs[i]) - x0) / width)), 0, columns - 1);
        sum[static_cast<size_t>(c)] += v * scale;
        ++count[static_cast<size_t>(c)];
        first = std::min(first, c);
        last = std::max(last, c);
    }
    if (holdLast && last >= 0) last = columns - 1;
    std::vector<double> row(sum.size(), kNaN);
    double previous = kNaN;
    for (int c = first; c <= last; ++c) {
        const size_t k = static_cast<size_t>(c);
        if (count[k]) previous = sum[k] / count[k];
        row[k] = previous;
    }
    return row;
}

// Rows of `cells` (ranks x columns) `perRow` at a time: in each column, the member farthest from
// the column's median over every rank, so that a straggler (hotter) or a rank that waits (cooler)
// is never averaged away; a rank without a value where the others have one (it stopped) is the
// farthest of all.
std::vector<std::vector<double>> binRows(const std::vector<std::vector<double>>& cells, int perRow) {
    if (perRow <= 1 || cells.empty()) return cells;
    const size_t columns = cells.front().size();
    std::vector<double> medians(columns, kNaN);
    for (size_t c = 0; c < columns; ++c) {
        std::vector<double> v;
        for (const auto& row : cells)
            if (std::isfinite(row[c])) v.push_back(row[c]);
        if (v.empty()) continue;
        std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
        medians[c] = v[v.size() / 2];
    }
    std::vector<std::vector<double>> out;
    for (size_t first = 0; first < cells.size(); first += static_cast<size_t>(perRow)) {
        const size_t last = std::min(cells.size(), first + static_cast<size_t>(perRow));
        std::vector<double> row(columns, kNaN);
        for (size_t c = 0; c < columns; ++c) {
            if (!std::isfinite(medians[c])) continue;
            double farthest = -1;
            for (size_t r = first; r < last; ++r) {
                const double v = cells[r][c];
                const double d = std::isfinite(v) ? std::abs(v - medians[c]) : std::numeric_limits<double>::infinity();
                if (d > farthest) farthest = d, row[c] = v;
            }
        }
        out.push_back(std::move(row));
    }
    return out;
}

QCPColorGradient activityGradient() {
    QCPColorGradient g;
    g.clearColorStops();
    for (const auto& [position, color] : RankActivityPalette::stops()) g.setColorStopAt(position, color);
    g.setColorInterpolation(QCPColorGradient::ciRGB);
    g.setLevelCount(101); // one level per percent
    g.setNanHandling(QCPColorGradient::nhTransparent);
    return g;
}

} // namespace

HeatMapPlot::HeatMapPlot(QWidget* parent) : QWidget(parent), m_plot(new QCustomPlot(this)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    setMinimumSize(200, 120);

    m_map = new QCPColorMap(m_plot->xAxis, m_plot->yAxis);
    m_scale = new QCPColorScale(m_plot);
    m_plot->plotLayout()->addElement(0, 1, m_scale);
    m_scale->setType(QCPAxis::atRight);
    m_map->setColorScale(m_scale);
    m_map->setGradient(activityGradient());
    m_map->setInterpolate(false);
    // Right click: the picture as PNG or SVG, and its cells as CSV (one row per column of cells,
    // one column per rank).
    PlotExport::forCustomPlot(
        m_plot,
        [this] {
            PlotTable t;
            QCPColorMapData* d = m_map->data();
            t.header << m_plot->xAxis->label();
            for (int r = 0; r < rows(); ++r) t.header << rowName(r);
            for (int k = 0; k < columns(); ++k) {
                const double key = m_firstKey + k * m_cellWidth;
                QStringList row{QString::number(key, 'g', 10)};
                for (int r = 0; r < rows(); ++r) {
                    const double v = d->cell(k, r);
                    row << (std::isnan(v) ? QString() : QString::number(v, 'g', 6));
                }
                t.rows.push_back(row);
            }
            return t;
        },
        QStringLiteral("device-heat-map"));
    // Fixed: a colour means the same share in every run and at every moment.
    m_map->setDataRange(QCPRange(0, 100));
    m_scale->setDataRange(QCPRange(0, 100));
    m_scale->setRangeDrag(false);
    m_scale->setRangeZoom(false);
    m_scale->axis()->setTicker(QSharedPointer<QCPAxisTicker>::create());
    m_scale->axis()->ticker()->setTickCount(4);
    auto margins = new QCPMarginGroup(m_plot);
    m_plot->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
    m_scale->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
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
    // Laid out first: the columns follow the map's width.
    m_plot->replot(QCustomPlot::rpImmediateRefresh);
    rebuild(true);
    m_plot->replot(QCustomPlot::rpImmediateRefresh);
}

int HeatMapPlot::columns() const { return m_mode == Mode::Empty ? 0 : m_columns; }

int HeatMapPlot::rows() const { return m_mode == Mode::Empty ? 0 : m_rows; }

double HeatMapPlot::cellValue(int column, int row) const {
    if (column < 0 || row < 0 || column >= columns() || row >= rows()) return kNaN;
    return m_map->data()->cell(column, row); // a doubled map's first half is the cell itself
}

void HeatMapPlot::fill(int columns, int rows, double firstKey, double cellWidth,
                       const std::function<double(int, int)>& cell) {
    m_columns = columns;
    m_rows = rows;
    m_firstKey = firstKey;
    m_cellWidth = cellWidth;
    // QCustomPlot draws a colour map between its first and last cells' centres widened by half a
    // cell, which for a single row or column is nothing: such a map holds the cell twice, at the
    // centres of its halves.
    const int keys = columns == 1 ? 2 : columns;
    const int values = rows == 1 ? 2 : rows;
    QCPColorMapData* data = m_map->data();
    data->setSize(keys, values);
    const QCPRange keyRange = columns == 1 ? QCPRange(firstKey - cellWidth / 4, firstKey + cellWidth / 4)
                                           : QCPRange(firstKey, firstKey + cellWidth * (columns - 1));
    // A row stands for m_ranksPerRow ranks: centred on them, so that the axis reads rank indices.
    const double h = m_ranksPerRow, first = (h - 1) / 2;
    const QCPRange valueRange = rows == 1 ? QCPRange(first - h / 4, first + h / 4) : QCPRange(first, first + h * (rows - 1));
    data->setRange(keyRange, valueRange);
    for (int c = 0; c < keys; ++c)
        for (int r = 0; r < values; ++r) data->setCell(c, r, cell(std::min(c, columns - 1), std::min(r, rows - 1)));
}

QColor HeatMapPlot::scaleColor(double percent) const {
    if (!std::isfinite(percent)) return QColor();
    return QColor::fromRgba(m_map->gradient().color(percent, QCPRange(0, 100)));
}

QColor HeatMapPlot::cellColor(int column, int row) const { return scaleColor(cellValue(column, row)); }

QString HeatMapPlot::scaleLabel() const { return m_scale->axis()->label(); }

void HeatMapPlot::rebuild(bool force) {
    if (!force && !isVisible()) return; // rebuilt when shown again (m_dirty stays set)
    m_dirty = false;
    m_sinceRebuild.start();
    const int maxColumns = std::clamp(m_plot->axisRect()->width() / 3, 10, kMaxColumns);
    if (m_model && !m_model->stepHistories().empty()) {
        buildSteps(maxColumns);
    } else if (m_model && !m_model->histories().empty()) {
        buildTime(maxColumns);
    } else {
        m_mode = Mode::Empty;
        m_map->data()->clear();
        m_scale->axis()->setLabel(tr("compute %"));
        // Nothing to draw yet: say so rather than show empty axes.
        for (QCPAxis* axis : {m_plot->xAxis, m_plot->yAxis}) {
            axis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
            axis->setRange(0, 1);
        }
        m_plot->yAxis->setLabel(QString());
        m_plot->xAxis->setLabel(tr("no rank steps or device samples yet"));
        setToolTip(QString());
    }
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void HeatMapPlot::buildSteps(int maxColumns) {
    m_mode = Mode::Steps;
    const auto& histories = m_model->stepHistories();
    int64_t s0 = std::numeric_limits<int64_t>::max(), s1 = std::numeric_limits<int64_t>::min();
    for (const auto& h : histories) {
        if (h.steps.empty()) continue;
        s0 = std::min(s0, h.steps.front());
        s1 = std::max(s1, h.steps.back());
    }
    if (s1 < s0) s0 = s1 = 0;
    const int64_t steps = s1 - s0 + 1;
    // Whole steps per column, so that a column is the same steps on every row.
    const int64_t perColumn = std::max<int64_t>(1, (steps + maxColumns - 1) / maxColumns);
    const int columns = static_cast<int>((steps + perColumn - 1) / perColumn);
    const int rows = static_cast<int>(histories.size());
    const double w = static_cast<double>(perColumn);
    const double x0 = static_cast<double>(s0);
    std::vector<std::vector<double>> cells;
    std::vector<QString> labels;
    for (int r = 0; r < rows; ++r) {
        const auto& h = histories[static_cast<size_t>(r)];
        cells.push_back(binRow(h.steps, h.computeShare, x0, w, columns, 100.0));
        labels.push_back(h.label);
    }
    fillRanks(cells, x0 - 0.5 + w / 2, w);
    m_scale->axis()->setLabel(tr("compute %"));
    setToolTip(tr("Each cell: the share of those steps the rank computed; the rest it waited in collectives") +
               binnedNote());
    m_plot->xAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
    m_plot->xAxis->ticker()->setTickCount(4);
    m_plot->xAxis->setLabel(tr("step"));
    m_plot->xAxis->setRange(x0 - 0.5, x0 - 0.5 + w * columns);
    setRowLabels(labels);
}

void HeatMapPlot::buildTime(int maxColumns) {
    m_mode = Mode::Time;
    const auto& histories = m_model->histories();
    const int rows = static_cast<int>(histories.size());
    const double t0 = m_model->firstTime();
    const double span = std::max(1.0, m_model->lastTime() - t0);
    const int columns = maxColumns;
    const double w = span / columns;
    // A GPU is busy at 100%, a CPU rank at 100% per thread: the same 0..100% scale either way.
    const bool gpu = m_model->isGpu();
    const double full = gpu ? 100.0 : 100.0 * m_model->cpuThreadsPerRank();
    std::vector<std::vector<double>> cells;
    std::vector<QString> labels;
    for (int r = 0; r < rows; ++r) {
        const auto& h = histories[static_cast<size_t>(r)];
        // A rank still sampling holds its last sample to the end; one that stopped (hung) ends early.
        const bool current = !h.t.empty() && m_model->lastTime() - h.t.back() <= DeviceGridModel::kStaleSeconds;
        std::vector<double> row = binRow(h.t, h.util, t0, w, columns, 100.0 / full, current);
        for (double& v : row) v = std::isfinite(v) ? std::min(100.0, v) : kNaN;
        cells.push_back(std::move(row));
        labels.push_back(h.label);
    }
    fillRanks(cells, w / 2, w);
    const int threads = m_model->cpuThreadsPerRank();
    m_scale->axis()->setLabel(gpu ? tr("GPU util %")
                                  : threads == 1 ? tr("CPU %, 1 thread") : tr("CPU %, %1 threads").arg(threads));
    auto ticker = QSharedPointer<QCPAxisTickerTime>::create();
    ticker->setTimeFormat(QStringLiteral("%h:%m:%s"));
    ticker->setTickCount(3); // the map is narrow beside the grid; long labels would collide
    m_plot->xAxis->setTicker(ticker);
    m_plot->xAxis->setLabel(tr("elapsed (h:m:s)"));
    m_plot->xAxis->setRange(0, span);
    setToolTip(tr("This run has no per-step compute and wait times: each cell is the device's utilization") +
               binnedNote());
    setRowLabels(labels);
}

void HeatMapPlot::fillRanks(const std::vector<std::vector<double>>& cells, double firstKey, double cellWidth) {
    m_ranks = static_cast<int>(cells.size());
    // At most one row per two pixels: more ranks share a row (binRows) rather than go undrawn.
    const int most = std::max(8, m_plot->axisRect()->height() / 2);
    m_ranksPerRow = std::max(1, (m_ranks + most - 1) / most);
    const std::vector<std::vector<double>> rows = binRows(cells, m_ranksPerRow);
    const int columns = rows.empty() ? 0 : static_cast<int>(rows.front().size());
    fill(columns, static_cast<int>(rows.size()), firstKey, cellWidth,
         [&rows](int c, int r) { return rows[static_cast<size_t>(r)][static_cast<size_t>(c)]; });
}

QString HeatMapPlot::rowName(int row) const {
    if (m_ranksPerRow <= 1) return tr("rank %1").arg(row);
    const int first = row * m_ranksPerRow, last = std::min(m_ranks, first + m_ranksPerRow) - 1;
    return tr("ranks %1-%2").arg(first).arg(last);
}

QString HeatMapPlot::binnedNote() const {
    if (m_ranksPerRow <= 1) return QString();
    return tr("\n%1 ranks a row: each cell shows the rank of the row farthest from all ranks' median, so a "
              "straggler or a rank that stopped is never averaged away").arg(m_ranksPerRow);
}

void HeatMapPlot::setRowLabels(const std::vector<QString>& labels) {
    const int rows = static_cast<int>(labels.size());
    if (m_ranksPerRow > 1) {
        m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
        m_plot->yAxis->setLabel(tr("rank (%1 a row)").arg(m_ranksPerRow));
        m_plot->yAxis->setRange(-0.5, rows - 0.5);
        return;
    }
    if (rows <= 32) {
        auto ticker = QSharedPointer<QCPAxisTickerText>::create();
        for (int r = 0; r < rows; ++r) ticker->addTick(r, labels[static_cast<size_t>(r)]);
        m_plot->yAxis->setTicker(ticker);
        m_plot->yAxis->setLabel(QString());
    } else {
        m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
        m_plot->yAxis->setLabel(tr("rank index"));
    }
    m_plot->yAxis->setRange(-0.5, rows - 0.5);
}

} // namespace parallax

#pragma once

#include "ui/models/DeviceGridModel.h"

#include <QElapsedTimer>
#include <QPointer>
#include <QTimer>
#include <QWidget>

class QCPColorMap;
class QCPColorScale;
class QCustomPlot;
class QShowEvent;

namespace parallax {

// Utilization over time, one row per rank: an idle or throttled GPU shows as a cold stripe, a
// hung rank as a stripe that ends early. Samples are averaged into one cell per few pixels. The
// model's changes are coalesced: at most one rebuild per kRedrawIntervalMs.
class HeatMapPlot : public QWidget {
    Q_OBJECT
public:
    static constexpr int kRedrawIntervalMs = 500;
    static constexpr int kMaxColumns = 400;

    explicit HeatMapPlot(QWidget* parent = nullptr);
    ~HeatMapPlot() override;

    // Follows the model's rows and data changes.
    void setModel(DeviceGridModel* model);
    // Rebuilds the map now (tests, screenshots).
    void rebuildNow();
    QCustomPlot* customPlot() const { return m_plot; }
    QCPColorMap* colorMap() const { return m_map; }

protected:
    void showEvent(QShowEvent* event) override;

private:
    void scheduleRebuild();
    void rebuild(bool force);

    QPointer<DeviceGridModel> m_model;
    QCustomPlot* m_plot = nullptr;
    QCPColorMap* m_map = nullptr;
    QCPColorScale* m_scale = nullptr;
    QTimer m_timer;
    QElapsedTimer m_sinceRebuild;
    bool m_dirty = false;
};

} // namespace parallax

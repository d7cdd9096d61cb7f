#pragma once

#include "ui/models/MetricSeriesTypes.h"

#include <QSpinBox>

namespace parallax {

// The "Smoothing %" control of the plots: 0-99 %, the weight of an exponential moving average
// drawn over the raw curve (0: off). smoothing() is what to hand to MetricSeries::setSmoothing.
class SmoothingBox : public QSpinBox {
    Q_OBJECT
public:
    SmoothingBox(int percent, const QString& toolTip, QWidget* parent = nullptr);

    MetricSmoothing smoothing() const { return MetricSmoothing::ema(value() / 100.0); }
};

} // namespace parallax

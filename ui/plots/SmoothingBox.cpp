#include "ui/plots/SmoothingBox.h"

namespace parallax {

SmoothingBox::SmoothingBox(int percent, const QString& toolTip, QWidget* parent) : QSpinBox(parent) {
    setRange(0, 99);
    setValue(percent);
    setSuffix(QStringLiteral("%"));
    setToolTip(toolTip);
}

} // namespace parallax

#include "ui/widgets/WindowFit.h"

#include <algorithm>

namespace parallax {

QRect fitWindowToScreen(const QRect& frame, const QSize& minimum, const QRect& available) {
    if (!available.isValid()) return frame;
    const int width = std::max(std::min(frame.width(), available.width()), minimum.width());
    const int height = std::max(std::min(frame.height(), available.height()), minimum.height());
    // Inside the area where it can be; a window wider than the area starts at its left edge.
    const int x = std::clamp(frame.x(), available.left(), std::max(available.left(), available.right() + 1 - width));
    const int y = std::clamp(frame.y(), available.top(), std::max(available.top(), available.bottom() + 1 - height));
    return QRect(x, y, width, height);
}

} // namespace parallax

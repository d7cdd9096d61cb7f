#pragma once

#include <QRect>
#include <QSize>

namespace parallax {

// Where a window of `frame` (a saved geometry, or the default size) goes on a screen whose free
// area is `available`: as large as it was but no larger than the area (nor smaller than `minimum`),
// moved inside it where it stood partly or wholly off it. A window that fits where it is stays.
QRect fitWindowToScreen(const QRect& frame, const QSize& minimum, const QRect& available);

} // namespace parallax

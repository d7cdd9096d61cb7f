#pragma once

#include <QIcon>

class QPainter;

namespace parallax {

// The console's icons, drawn in code so that they need no image plugin and follow the palette's
// text color. Each page paints its own (its paintIcon, named in MainWindow's list of pages) on a
// 24 x 24 grid, with a round pen of `color` and no brush set.
using IconPainter = void (*)(QPainter& p, const QColor& color);
QIcon pageIcon(IconPainter paint, const QColor& color);
// The application's icon: three staggered bars (pipeline stages) over a grid of ranks.
QIcon applicationIcon();

} // namespace parallax

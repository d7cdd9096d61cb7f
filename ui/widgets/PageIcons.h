#pragma once

#include <QIcon>

namespace parallax {

// The console's icons, drawn in code so that they need no image plugin and follow the palette's
// text color.
enum class PageIcon { NewRun, Live, Logs, Runs, Compare, Pipeline, Cluster };

QIcon pageIcon(PageIcon kind, const QColor& color);
// The application's icon: three staggered bars (pipeline stages) over a grid of ranks.
QIcon applicationIcon();

} // namespace parallax

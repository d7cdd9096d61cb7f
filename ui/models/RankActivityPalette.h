#pragma once

#include <QColor>
#include <QString>

#include <utility>
#include <vector>

namespace parallax {

// One colour scale for what a rank does, shared by the device grid and the heat map so that a
// colour means the same on both: the share of a step the rank computes, from cool (it waits in
// collectives for the others) to warm (it computes; the others wait for it). Where a run has no
// per-step compute and wait times, the same scale shows the device's busy share instead.
class RankActivityPalette {
public:
    // share in 0..1 (clamped); not finite: the grey of "unknown".
    static QColor color(double share);
    // The scale's stops (position 0..1, colour), linear in RGB between them, for gradients.
    static const std::vector<std::pair<double, QColor>>& stops();
    static QColor unknownColor() { return QColor(0xe0, 0xe0, 0xe0); }
};

} // namespace parallax

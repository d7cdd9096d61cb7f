#pragma once

#include <QString>

#include <functional>
#include <vector>

class QCPAbstractLegendItem;
class QCPAbstractPlottable;
class QCPLegend;

namespace parallax {

// Lays a QCPLegend out in lines across a plot's width.
//
// A wrapped legend is a QCPLayoutGrid filled line by line (QCPLayoutGrid::setWrap and
// setFillOrder): where the items do not fill its last line, the rest of that line is empty cells.
// QCPLegend::itemCount() counts those cells too (it is the grid's cell count) and
// QCPLegend::item() is null for them, so code that walks the legend goes through items().
class LegendLayout {
public:
    // The full name of a plottable's item; a null QString leaves its item's text as it is.
    using FullName = std::function<QString(const QCPAbstractPlottable*)>;

    // The legend's items in its fill order, without the empty cells.
    static std::vector<QCPAbstractLegendItem*> items(const QCPLegend& legend);

    // Gives each plottable's item its full name, with the middle left out where the item alone
    // would be wider than `width` pixels (the plot's width); then wraps the items into as many
    // columns of the widest item as the width holds, packed to the left.
    static void fit(QCPLegend& legend, int width, const FullName& fullName);
};

} // namespace parallax

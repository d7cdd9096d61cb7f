#include "ui/plots/LegendLayout.h"

#include <qcustomplot.h>

#include <QFontMetrics>

#include <algorithm>

namespace parallax {

namespace {

// Names the item `full`, or `full` with its middle elided where the item would be wider than
// `room`. The item measures its text with QFontMetrics::boundingRect, which can be a few pixels
// wider than the advance elidedText fits, so the fit is checked on the item itself.
void nameWithin(QCPPlottableLegendItem& item, int room, const QString& full) {
    const QFontMetrics metrics(item.font());
    const QCPLayoutElement& element = item;
    QString text = full;
    int textRoom = metrics.horizontalAdvance(full);
    for (int tries = 0; tries < 4; ++tries) {
        item.plottable()->setName(text);
        const int over = element.minimumOuterSizeHint().width() - room;
        if (over <= 0 || textRoom <= 0) return;
        textRoom -= over;
        text = metrics.elidedText(full, Qt::ElideMiddle, std::max(0, textRoom));
    }
}

} // namespace

std::vector<QCPAbstractLegendItem*> LegendLayout::items(const QCPLegend& legend) {
    std::vector<QCPAbstractLegendItem*> out;
    for (int i = 0; i < legend.elementCount(); ++i)
        if (auto* item = qobject_cast<QCPAbstractLegendItem*>(legend.elementAt(i))) out.push_back(item);
    return out;
}

void LegendLayout::fit(QCPLegend& legend, int width, const FullName& fullName) {
    const int room = std::max(1, width - legend.margins().left() - legend.margins().right());
    const int spacing = legend.columnSpacing();
    int widest = 1;
    for (QCPAbstractLegendItem* item : items(legend)) {
        if (auto* named = qobject_cast<QCPPlottableLegendItem*>(item)) {
            const QString full = named->plottable() ? fullName(named->plottable()) : QString();
            if (!full.isNull()) nameWithin(*named, room, full);
        }
        widest = std::max(widest, static_cast<const QCPLayoutElement*>(item)->minimumOuterSizeHint().width());
    }
    // n columns take n widths and n - 1 spacings.
    const int wrap = std::max(1, (room + spacing) / (widest + spacing));
    if (wrap != legend.wrap()) {
        legend.setWrap(wrap);
        // Items placed under the old wrap move to their places under the new one; the last line
        // may end in empty cells.
        legend.setFillOrder(legend.fillOrder(), true);
    }
    // Packed to the left: the room left over goes after the last column, not between items.
    for (int c = 0; c < legend.columnCount(); ++c)
        legend.setColumnStretchFactor(c, c + 1 == legend.columnCount() ? 1.0 : 1e-3);
}

} // namespace parallax

#include "ui/widgets/HostAlarmDelegate.h"

#include "ui/models/DeviceGridModel.h"

#include <QPainter>

namespace parallax {

HostAlarmDelegate::HostAlarmDelegate(QObject* parent) : QStyledItemDelegate(parent) {}

void HostAlarmDelegate::paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const {
    QStyledItemDelegate::paint(painter, option, index);
    if (index.data(DeviceGridModel::AlertRole).toBool()) {
        // The rank an alert names: a frame of its own inside the cell, apart from the host's.
        painter->save();
        painter->setPen(QPen(kAlertColor, kAlertWidth, Qt::SolidLine, Qt::SquareCap, Qt::MiterJoin));
        painter->setBrush(Qt::NoBrush);
        const int inset = kOutlineWidth + kAlertWidth / 2 + 1;
        painter->drawRect(option.rect.adjusted(inset, inset, -inset - 1, -inset - 1));
        painter->restore();
    }
    if (!index.data(DeviceGridModel::HostAlarmRole).toBool()) return;
    painter->save();
    painter->setPen(Qt::NoPen);
    painter->setBrush(QColor(0xc6, 0x28, 0x28));
    const QRect r = option.rect;
    const int w = kOutlineWidth;
    // Top and bottom on every cell, the sides on the row's first and last: one frame per host.
    painter->drawRect(QRect(r.left(), r.top(), r.width(), w));
    painter->drawRect(QRect(r.left(), r.bottom() - w + 1, r.width(), w));
    if (index.column() == 0) painter->drawRect(QRect(r.left(), r.top(), w, r.height()));
    if (index.column() == index.model()->columnCount(index.parent()) - 1)
        painter->drawRect(QRect(r.right() - w + 1, r.top(), w, r.height()));
    painter->restore();
}

} // namespace parallax

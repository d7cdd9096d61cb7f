#include "ui/widgets/HostAlarmDelegate.h"

#include "ui/models/DeviceGridModel.h"

#include <QPainter>

namespace parallax {

HostAlarmDelegate::HostAlarmDelegate(QObject* parent) : QStyledItemDelegate(parent) {}

QRect HostAlarmDelegate::alertFrame(const QRect& cell, bool hostAlarm) {
    const int inset = hostAlarm ? kOutlineWidth : 0;
    return cell.adjusted(inset, inset, -inset, -inset);
}

QSize HostAlarmDelegate::sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const {
    QSize size = QStyledItemDelegate::sizeHint(option, index);
    int frames = index.data(DeviceGridModel::AlertRole).toBool() ? kAlertWidth : 0;
    if (index.data(DeviceGridModel::HostAlarmRole).toBool()) frames += kOutlineWidth;
    return size + QSize(2 * frames, 2 * frames);
}

void HostAlarmDelegate::paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const {
    QStyledItemDelegate::paint(painter, option, index);
    const bool hostAlarm = index.data(DeviceGridModel::HostAlarmRole).toBool();
    if (index.data(DeviceGridModel::AlertRole).toBool()) {
        // The rank an alert names: a frame of its own along the cell's edge, inside the host's.
        painter->save();
        painter->setPen(Qt::NoPen);
        painter->setBrush(kAlertColor);
        const QRect f = alertFrame(option.rect, hostAlarm);
        const int w = kAlertWidth;
        painter->drawRect(QRect(f.left(), f.top(), f.width(), w));
        painter->drawRect(QRect(f.left(), f.bottom() - w + 1, f.width(), w));
        painter->drawRect(QRect(f.left(), f.top(), w, f.height()));
        painter->drawRect(QRect(f.right() - w + 1, f.top(), w, f.height()));
        painter->restore();
    }
    if (!hostAlarm) return;
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

#pragma once

#include <QColor>
#include <QRect>
#include <QStyledItemDelegate>

namespace parallax {

// Draws the device grid's cells as usual and outlines, in red, the row of a host the supervisor
// finds silent or lost (DeviceGridModel::HostAlarmRole): one frame around all of the host's
// devices, visible at a glance on a grid of hundreds of tiles. A rank an active alert names (the
// hung or straggling rank, DeviceGridModel::AlertRole) gets a frame of its own inside its cell.
class HostAlarmDelegate : public QStyledItemDelegate {
    Q_OBJECT
public:
    static constexpr int kOutlineWidth = 3;
    static constexpr int kAlertWidth = 3;
    static inline const QColor kAlertColor{0x8e, 0x24, 0xaa};

    explicit HostAlarmDelegate(QObject* parent = nullptr);

    // The outer edge of the alert frame of a cell (inside the host's frame when it has one).
    static QRect alertFrame(const QRect& cell, bool hostAlarm);

    void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override;
    // Room for the frames besides the text, so that a row sized to its contents keeps its text
    // clear of them.
    QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override;
};

} // namespace parallax

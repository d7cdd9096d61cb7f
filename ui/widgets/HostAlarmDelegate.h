#pragma once

#include <QStyledItemDelegate>

namespace parallax {

// Draws the device grid's cells as usual and outlines, in red, the row of a host the supervisor
// finds silent or lost (DeviceGridModel::HostAlarmRole): one frame around all of the host's
// devices, visible at a glance on a grid of hundreds of tiles.
class HostAlarmDelegate : public QStyledItemDelegate {
    Q_OBJECT
public:
    static constexpr int kOutlineWidth = 3;

    explicit HostAlarmDelegate(QObject* parent = nullptr);

    void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override;
};

} // namespace parallax

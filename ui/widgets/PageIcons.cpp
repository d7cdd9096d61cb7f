#include "ui/widgets/PageIcons.h"

#include <QPainter>
#include <QPixmap>

#include <functional>

namespace parallax {

namespace {

// Paints on a 24 x 24 grid scaled to `size`.
QPixmap draw(int size, const std::function<void(QPainter&)>& paint) {
    QPixmap pixmap(size, size);
    pixmap.fill(Qt::transparent);
    QPainter p(&pixmap);
    p.setRenderHint(QPainter::Antialiasing, true);
    p.scale(size / 24.0, size / 24.0);
    paint(p);
    return pixmap;
}

} // namespace

QIcon pageIcon(IconPainter paint, const QColor& color) {
    QIcon icon;
    for (int size : {16, 24, 32, 48}) {
        icon.addPixmap(draw(size, [&](QPainter& p) {
            p.setPen(QPen(color, 2.0, Qt::SolidLine, Qt::RoundCap, Qt::RoundJoin));
            p.setBrush(Qt::NoBrush);
            paint(p, color);
        }));
    }
    return icon;
}

QIcon applicationIcon() {
    QIcon icon;
    const QColor stages[] = {QColor(0x4e, 0x79, 0xa7), QColor(0xf2, 0x8e, 0x2b), QColor(0x59, 0xa1, 0x4f)};
    for (int size : {16, 32, 48, 64, 128, 256}) {
        icon.addPixmap(draw(size, [&](QPainter& p) {
            p.setPen(Qt::NoPen);
            p.setBrush(QColor(0x22, 0x28, 0x33));
            p.drawRoundedRect(QRectF(0.5, 0.5, 23, 23), 5, 5);
            // Three pipeline stages, each a bar shifted right by one slot.
            for (int s = 0; s < 3; ++s) {
                p.setBrush(stages[s]);
                p.drawRoundedRect(QRectF(3.5 + 3 * s, 5 + 5 * s, 11, 3.6), 1.2, 1.2);
            }
        }));
    }
    return icon;
}

} // namespace parallax

#include "ui/widgets/PageIcons.h"

#include <QPainter>
#include <QPainterPath>
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

QIcon pageIcon(PageIcon kind, const QColor& color) {
    QIcon icon;
    for (int size : {16, 24, 32, 48}) {
        icon.addPixmap(draw(size, [&](QPainter& p) {
            QPen pen(color, 2.0, Qt::SolidLine, Qt::RoundCap, Qt::RoundJoin);
            p.setPen(pen);
            p.setBrush(Qt::NoBrush);
            switch (kind) {
            case PageIcon::NewRun: // a play triangle in a circle
                p.drawEllipse(QRectF(2.5, 2.5, 19, 19));
                p.setBrush(color);
                p.drawPolygon(QPolygonF({QPointF(10, 7.5), QPointF(17, 12), QPointF(10, 16.5)}));
                break;
            case PageIcon::Live: { // a pulse
                QPainterPath path(QPointF(2, 13));
                for (const QPointF& pt : {QPointF(7, 13), QPointF(9.5, 5), QPointF(13.5, 20), QPointF(16, 11),
                                          QPointF(17.5, 13), QPointF(22, 13)})
                    path.lineTo(pt);
                p.drawPath(path);
                break;
            }
            case PageIcon::Logs: // lines of text of several lengths
                for (const auto& [y, w] : {std::pair{5.0, 17.0}, {10.0, 12.0}, {15.0, 17.0}, {20.0, 9.0}})
                    p.drawLine(QPointF(4, y), QPointF(4 + w, y));
                break;
            case PageIcon::Runs: // a list with bullets
                for (double y : {5.5, 12.0, 18.5}) {
                    p.drawPoint(QPointF(4, y));
                    p.drawLine(QPointF(8.5, y), QPointF(21, y));
                }
                break;
            case PageIcon::Compare: { // two curves
                QPainterPath a(QPointF(2.5, 19));
                a.cubicTo(QPointF(7, 6), QPointF(13, 5), QPointF(21.5, 4.5));
                p.drawPath(a);
                QPen dashed = pen;
                dashed.setDashPattern({1.5, 1.8});
                p.setPen(dashed);
                QPainterPath b(QPointF(2.5, 21));
                b.cubicTo(QPointF(9, 16), QPointF(14, 11), QPointF(21.5, 10));
                p.drawPath(b);
                break;
            }
            case PageIcon::Pipeline: // staggered bars
                for (int s = 0; s < 3; ++s) p.drawLine(QPointF(3 + 4 * s, 6 + 6 * s), QPointF(12 + 4 * s, 6 + 6 * s));
                break;
            case PageIcon::Cluster: // two machines in a rack, each with its status light
                for (double y : {3.5, 13.5}) {
                    p.drawRoundedRect(QRectF(3, y, 18, 7), 1.5, 1.5);
                    p.drawPoint(QPointF(7, y + 3.5));
                    p.drawLine(QPointF(11, y + 3.5), QPointF(17, y + 3.5));
                }
                break;
            }
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

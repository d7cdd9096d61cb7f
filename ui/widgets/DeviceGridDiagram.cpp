#include "ui/widgets/DeviceGridDiagram.h"

#include "core/spec/MeshCoord.h"

#include <QEvent>
#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace parallax {

namespace {
constexpr double kMaxCell = 34;
constexpr double kMinCell = 3;
constexpr int kLegendHeight = 18;
} // namespace

DeviceGridDiagram::DeviceGridDiagram(QWidget* parent) : QWidget(parent) {
    QSizePolicy policy(QSizePolicy::Expanding, QSizePolicy::Preferred);
    policy.setHeightForWidth(true);
    setSizePolicy(policy);
    setMouseTracking(true);
}

void DeviceGridDiagram::setLayout(int64_t dp, int64_t tp, int64_t pp) {
    dp = std::max<int64_t>(1, dp);
    tp = std::max<int64_t>(1, tp);
    pp = std::max<int64_t>(1, pp);
    if (dp == m_dp && tp == m_tp && pp == m_pp) return;
    m_dp = dp;
    m_tp = tp;
    m_pp = pp;
    updateGeometry();
    update();
}

// Both through core/spec/MeshCoord.h, the one numbering rule of the worker's groups.
int64_t DeviceGridDiagram::rankOf(const Coordinates& c, int64_t dp, int64_t tp) {
    return meshRank(MeshCoord{int(c.dp), int(c.tp), int(c.pp)}, int(dp), int(tp), 0);
}

DeviceGridDiagram::Coordinates DeviceGridDiagram::coordinatesOf(int64_t rank, int64_t dp, int64_t tp) {
    const MeshCoord m = meshCoord(int(rank), int(dp), int(tp), 0);
    return Coordinates{m.dp, m.tp, m.pp};
}

QColor DeviceGridDiagram::stageColor(int64_t stage) {
    static const QColor colors[] = {QColor(0x4e, 0x79, 0xa7), QColor(0xf2, 0x8e, 0x2b), QColor(0x59, 0xa1, 0x4f),
                                    QColor(0xe1, 0x57, 0x59), QColor(0x76, 0xb7, 0xb2), QColor(0xed, 0xc9, 0x48),
                                    QColor(0xb0, 0x7a, 0xa1), QColor(0x9c, 0x75, 0x5f)};
    const int n = int(std::size(colors));
    const QColor base = colors[stage % n];
    // Beyond the palette the hues repeat, lighter each round, so neighbouring stages stay apart.
    return base.lighter(100 + int(stage / n) * 25);
}

bool DeviceGridDiagram::drawable() const {
    return m_dp * m_tp * m_pp <= kMaxDrawnRanks;
}

DeviceGridDiagram::Geometry DeviceGridDiagram::geometry(int width) const {
    Geometry g;
    g.left = fontMetrics().horizontalAdvance(QStringLiteral("stage 00 ")) + 4;
    g.top = 2;
    const double columns = double(m_dp * m_tp);
    const double gapsPerCell = 0.35; // a dp gap is this fraction of a cell
    const double available = std::max(10.0, double(width) - g.left - 4);
    g.cell = std::clamp(available / (columns + gapsPerCell * double(m_dp - 1)), kMinCell, kMaxCell);
    g.groupGap = std::max(2.0, g.cell * gapsPerCell);
    g.rowGap = std::max(2.0, g.cell * 0.3);
    return g;
}

int DeviceGridDiagram::heightForWidth(int width) const {
    if (!drawable()) return fontMetrics().height() * 2;
    const Geometry g = geometry(width);
    return int(std::ceil(g.top + double(m_pp) * (g.cell + g.rowGap))) + kLegendHeight;
}

QSize DeviceGridDiagram::sizeHint() const {
    return {360, heightForWidth(360)};
}

QSize DeviceGridDiagram::minimumSizeHint() const {
    return {160, heightForWidth(160)};
}

QRectF DeviceGridDiagram::cellRect(int64_t rank) const {
    if (!drawable() || rank < 0 || rank >= m_dp * m_tp * m_pp) return {};
    const Geometry g = geometry(width());
    const Coordinates c = coordinatesOf(rank, m_dp, m_tp);
    const double x = g.left + double(c.dp) * (double(m_tp) * g.cell + g.groupGap) + double(c.tp) * g.cell;
    const double y = g.top + double(c.pp) * (g.cell + g.rowGap);
    return {x, y, g.cell, g.cell};
}

int64_t DeviceGridDiagram::rankAt(const QPointF& pos) const {
    const int64_t world = m_dp * m_tp * m_pp;
    if (!drawable()) return -1;
    for (int64_t r = 0; r < world; ++r)
        if (cellRect(r).contains(pos)) return r;
    return -1;
}

bool DeviceGridDiagram::event(QEvent* event) {
    if (event->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(event);
        const int64_t rank = rankAt(help->pos());
        if (rank >= 0) {
            const Coordinates c = coordinatesOf(rank, m_dp, m_tp);
            QToolTip::showText(help->globalPos(),
                               tr("rank %1: pipeline stage %2, data-parallel replica %3, tensor-parallel rank %4")
                                   .arg(rank)
                                   .arg(c.pp)
                                   .arg(c.dp)
                                   .arg(c.tp),
                               this);
        } else {
            QToolTip::hideText();
            event->ignore();
        }
        return true;
    }
    return QWidget::event(event);
}

void DeviceGridDiagram::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const QColor text = palette().color(QPalette::WindowText);
    const int64_t world = m_dp * m_tp * m_pp;
    if (!drawable()) {
        p.setPen(text);
        p.drawText(rect(), Qt::AlignLeft | Qt::AlignVCenter | Qt::TextWordWrap,
                   tr("%1 ranks (dp %2 x tp %3 x pp %4): too many to draw").arg(world).arg(m_dp).arg(m_tp).arg(m_pp));
        return;
    }
    p.setRenderHint(QPainter::Antialiasing, true);
    const Geometry g = geometry(width());
    const bool labels = g.cell >= fontMetrics().horizontalAdvance(QString::number(world - 1)) + 4;
    QFont small = font();
    small.setPointSizeF(std::max(6.0, font().pointSizeF() * 0.85));

    for (int64_t s = 0; s < m_pp; ++s) {
        const double y = g.top + double(s) * (g.cell + g.rowGap);
        p.setPen(text);
        p.setFont(font());
        p.drawText(QRectF(0, y, g.left - 4, g.cell), Qt::AlignRight | Qt::AlignVCenter, tr("stage %1").arg(s));
        const QColor fill = stageColor(s);
        for (int64_t d = 0; d < m_dp; ++d) {
            for (int64_t t = 0; t < m_tp; ++t) {
                const int64_t rank = rankOf({d, t, s}, m_dp, m_tp);
                const QRectF cell = cellRect(rank);
                p.setPen(QPen(fill.darker(130), 1));
                p.setBrush(fill);
                p.drawRect(cell.adjusted(0.5, 0.5, -0.5, -0.5));
                if (labels) {
                    p.setFont(small);
                    p.setPen(fill.lightness() > 150 ? Qt::black : Qt::white);
                    p.drawText(cell, Qt::AlignCenter, QString::number(rank));
                }
            }
            // The tensor-parallel group of this replica, outlined as one unit.
            const QRectF first = cellRect(rankOf({d, 0, s}, m_dp, m_tp));
            const QRectF last = cellRect(rankOf({d, m_tp - 1, s}, m_dp, m_tp));
            p.setBrush(Qt::NoBrush);
            p.setPen(QPen(text, m_tp > 1 ? 2.0 : 1.0));
            p.drawRect(first.united(last).adjusted(-1, -1, 1, 1));
        }
    }
    p.setFont(font());
    p.setPen(palette().color(QPalette::PlaceholderText));
    const double legendTop = g.top + double(m_pp) * (g.cell + g.rowGap);
    p.drawText(QRectF(0, legendTop, width(), kLegendHeight), Qt::AlignLeft | Qt::AlignVCenter,
               fontMetrics().elidedText(tr("%1 ranks = dp %2 × tp %3 × pp %4; tp groups outlined")
                                            .arg(world)
                                            .arg(m_dp)
                                            .arg(m_tp)
                                            .arg(m_pp),
                                        Qt::ElideRight, width()));
}

} // namespace parallax

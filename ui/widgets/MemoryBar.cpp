#include "ui/widgets/MemoryBar.h"

#include "core/spec/Estimates.h"

#include <QPainter>
#include <QPaintEvent>

#include <algorithm>

namespace parallax {

namespace {
constexpr int kBarHeight = 22;
constexpr int kLegendRowHeight = 18;
constexpr int kLegendColumns = 3;
// Below this share of the capacity the bar is drawn to the parts' own scale.
constexpr double kCapacityScaleFraction = 0.2;

QString bytesText(double bytes) {
    return QString::fromStdString(formatBytes(bytes));
}
} // namespace

MemoryBar::MemoryBar(QWidget* parent) : QWidget(parent) {
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

QVector<QColor> MemoryBar::partColors() {
    return {QColor(0x3b, 0x75, 0xaf), QColor(0xef, 0x86, 0x36), QColor(0x51, 0x9e, 0x3e), QColor(0x8d, 0x69, 0xb8),
            QColor(0x84, 0x58, 0x4e), QColor(0x7f, 0x7f, 0x7f)};
}

void MemoryBar::setSegments(const QVector<Segment>& segments) {
    m_segments = segments;
    setToolTip(tooltipText());
    updateGeometry(); // the legend's rows follow its texts
    update();
}

void MemoryBar::setCapacity(double bytes, const QString& label) {
    m_capacity = bytes;
    m_capacityLabel = label;
    setToolTip(tooltipText());
    update();
}

double MemoryBar::total() const {
    double sum = 0;
    for (const Segment& s : m_segments) sum += std::max(0.0, s.bytes);
    return sum;
}

QString MemoryBar::tooltipText() const {
    QString text;
    for (const Segment& s : m_segments) text += QStringLiteral("%1: %2\n").arg(s.label, bytesText(s.bytes));
    text += tr("total: %1").arg(bytesText(total()));
    if (m_capacity > 0) text += tr("\n%1: %2").arg(m_capacityLabel, bytesText(m_capacity));
    return text;
}

int MemoryBar::legendColumns(int width) const {
    // As many columns as fit every part's text whole: an elided "weights 1.1 …" hides the figure.
    const QFontMetrics fm(font());
    int widest = 1;
    for (const Segment& s : m_segments)
        widest = std::max(widest, fm.horizontalAdvance(QStringLiteral("%1 %2").arg(s.label, bytesText(s.bytes))) + 24);
    return std::clamp(width / widest, 1, kLegendColumns);
}

int MemoryBar::heightForWidth(int width) const {
    const int columns = legendColumns(width);
    const int rows = (int(m_segments.size()) + columns - 1) / columns;
    // The summary line may wrap onto a second row.
    return kBarHeight + 8 + std::max(1, rows) * kLegendRowHeight + 2 * kLegendRowHeight;
}

bool MemoryBar::hasHeightForWidth() const {
    return true;
}

QSize MemoryBar::sizeHint() const {
    return {360, heightForWidth(360)};
}

QSize MemoryBar::minimumSizeHint() const {
    return {200, sizeHint().height()};
}

void MemoryBar::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing, false);
    const QRect bar(0, 0, width() - 1, kBarHeight);
    const double sum = total();
    // Room past the larger of total and capacity so the capacity mark is never on the edge. A layout
    // using a sliver of its device would draw an invisible bar at that scale: then the bar shows the
    // parts at their own scale and the text says how much of the device they take.
    const bool capacityOnScale = m_capacity > 0 && sum >= kCapacityScaleFraction * m_capacity;
    const double scale = (capacityOnScale || sum <= 0 ? std::max(sum, m_capacity) : sum) * 1.05;

    p.fillRect(bar, palette().color(QPalette::Base));
    if (scale > 0) {
        double x = bar.left();
        for (const Segment& s : m_segments) {
            const double w = std::max(0.0, s.bytes) / scale * bar.width();
            p.fillRect(QRectF(x, bar.top(), w, bar.height()), s.color);
            x += w;
        }
        if (capacityOnScale) {
            const double cx = bar.left() + m_capacity / scale * bar.width();
            // Past the capacity the bar is hatched: that part does not fit.
            if (sum > m_capacity)
                p.fillRect(QRectF(cx, bar.top(), x - cx, bar.height()), QBrush(QColor(200, 30, 30, 150), Qt::BDiagPattern));
            p.setPen(QPen(overCapacity() ? QColor(200, 30, 30) : palette().color(QPalette::WindowText), 2));
            p.drawLine(QPointF(cx, bar.top() - 1), QPointF(cx, bar.bottom() + 2));
        }
    }
    p.setPen(palette().color(QPalette::Mid));
    p.drawRect(bar);

    // Legend: a swatch and the size of each part, then the total against the capacity.
    const QFontMetrics fm(font());
    const int columns = legendColumns(width());
    const int columnWidth = std::max(1, width() / columns);
    int y = kBarHeight + 6;
    for (int i = 0; i < m_segments.size(); ++i) {
        const int col = i % columns;
        const int row = i / columns;
        const QRect cell(col * columnWidth, y + row * kLegendRowHeight, columnWidth, kLegendRowHeight);
        p.fillRect(QRect(cell.left(), cell.top() + 4, 10, 10), m_segments[i].color);
        p.setPen(palette().color(QPalette::WindowText));
        const QString text = QStringLiteral("%1 %2").arg(m_segments[i].label, bytesText(m_segments[i].bytes));
        p.drawText(cell.adjusted(14, 0, 0, 0), Qt::AlignLeft | Qt::AlignVCenter,
                   fm.elidedText(text, Qt::ElideRight, cell.width() - 16));
    }
    const int rows = (int(m_segments.size()) + columns - 1) / columns;
    const QRect summary(0, y + std::max(1, rows) * kLegendRowHeight, width(), 2 * kLegendRowHeight);
    QString text = tr("total %1").arg(bytesText(sum));
    if (m_capacity > 0) {
        text += tr(" of %1 %2 (%3%)")
                    .arg(bytesText(m_capacity), m_capacityLabel)
                    .arg(sum / m_capacity * 100.0, 0, 'f', sum / m_capacity < 0.1 ? 2 : 0);
        if (!capacityOnScale && sum > 0) text += tr(", bar not to scale");
    }
    QFont bold = font();
    bold.setBold(overCapacity());
    p.setFont(bold);
    p.setPen(overCapacity() ? QColor(200, 30, 30) : palette().color(QPalette::WindowText));
    p.drawText(summary, Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, text);
}

} // namespace parallax

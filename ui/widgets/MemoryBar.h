#pragma once

#include <QColor>
#include <QString>
#include <QVector>
#include <QWidget>

namespace parallax {

// One device's memory as a horizontal stacked bar (weights, gradients, optimizer, ...) with the
// device's capacity marked, so that a layout that does not fit shows at a glance by how much.
class MemoryBar : public QWidget {
    Q_OBJECT
public:
    struct Segment {
        QString label;
        double bytes = 0;
        QColor color;
    };

    explicit MemoryBar(QWidget* parent = nullptr);

    void setSegments(const QVector<Segment>& segments);
    const QVector<Segment>& segments() const { return m_segments; }
    void setCapacity(double bytes, const QString& label);
    double capacity() const { return m_capacity; }
    double total() const;
    bool overCapacity() const { return m_capacity > 0 && total() > m_capacity; }
    // The palette of the five parts of a MemoryEstimate, in its order.
    static QVector<QColor> partColors();

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;
    bool hasHeightForWidth() const override;
    int heightForWidth(int width) const override;

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    QString tooltipText() const;
    int legendColumns(int width) const;

    QVector<Segment> m_segments;
    double m_capacity = 0;
    QString m_capacityLabel;
};

} // namespace parallax

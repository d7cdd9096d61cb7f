#include "ui/widgets/WrappingLabel.h"

WrappingLabel::WrappingLabel(QWidget* parent) : QLabel(parent) {
    setWordWrap(true);
    setAlignment(Qt::AlignLeft | Qt::AlignTop);
}

QSize WrappingLabel::sizeHint() const {
    // The height of the text at the width the label has, once it has one: QLabel's own hint is the
    // text at a preferred width of its choosing.
    const QSize hint = QLabel::sizeHint();
    if (m_fitted <= 0) return hint;
    return {hint.width(), m_fitted};
}

void WrappingLabel::setWrappedText(const QString& text) {
    setText(text);
    m_fitted = -1;
    if (testAttribute(Qt::WA_Resized) || isVisible()) fitHeight();
}

void WrappingLabel::resizeEvent(QResizeEvent* event) {
    QLabel::resizeEvent(event);
    fitHeight();
}

void WrappingLabel::fitHeight() {
    const int needed = text().isEmpty() ? 0 : heightForWidth(width());
    if (needed <= 0 || needed == m_fitted) return;
    m_fitted = needed;
    setMinimumHeight(needed);
    updateGeometry(); // the hint changed with the width: layouts that cached it ask again
}

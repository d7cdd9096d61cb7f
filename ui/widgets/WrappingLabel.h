#pragma once

#include <QLabel>

// A word-wrapped label that asks for the height of its text at the width it is given. A wrapped
// QLabel's size hint is its text at the label's preferred width, and QFormLayout sizes a row by the
// hint: a long message in a narrower field column lost its last lines. This label keeps its minimum
// height at heightForWidth(width()), after each resize and each new text, so the row grows, and
// hints that height too, so that the row does not keep the taller height of a narrower width.
class WrappingLabel : public QLabel {
public:
    explicit WrappingLabel(QWidget* parent = nullptr);
    // QLabel::setText, then the minimum height for the new text.
    void setWrappedText(const QString& text);
    QSize sizeHint() const override;

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void fitHeight();

    int m_fitted = -1; // the height the minimum and the hint were last fitted to
};

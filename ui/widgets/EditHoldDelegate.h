#pragma once

#include <QStyledItemDelegate>

namespace parallax {

// A styled delegate that says when a cell's editor opens and when the last one closes, so that a
// view over a live, sorted list can hold its order while a person types: a row that moved away
// under an open editor would take the text to another row's place on screen.
class EditHoldDelegate : public QStyledItemDelegate {
    Q_OBJECT
public:
    explicit EditHoldDelegate(QObject* parent = nullptr);

    QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem& option, const QModelIndex& index) const override;
    void destroyEditor(QWidget* editor, const QModelIndex& index) const override;

    bool editing() const { return m_open > 0; }

signals:
    void editingStarted();
    void editingFinished();

private:
    mutable int m_open = 0;
};

} // namespace parallax

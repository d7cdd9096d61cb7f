#include "ui/widgets/EditHoldDelegate.h"

namespace parallax {

EditHoldDelegate::EditHoldDelegate(QObject* parent) : QStyledItemDelegate(parent) {}

QWidget* EditHoldDelegate::createEditor(QWidget* parent, const QStyleOptionViewItem& option,
                                        const QModelIndex& index) const {
    QWidget* editor = QStyledItemDelegate::createEditor(parent, option, index);
    if (editor && m_open++ == 0) emit const_cast<EditHoldDelegate*>(this)->editingStarted();
    return editor;
}

void EditHoldDelegate::destroyEditor(QWidget* editor, const QModelIndex& index) const {
    QStyledItemDelegate::destroyEditor(editor, index);
    if (m_open > 0 && --m_open == 0) emit const_cast<EditHoldDelegate*>(this)->editingFinished();
}

} // namespace parallax

#include "ui/widgets/FileDialogs.h"

#include <QAbstractFileIconProvider>
#include <QApplication>
#include <QFileDialog>
#include <QStyle>

namespace parallax {

namespace {

// Icons and type names from the file's kind (folder or file) alone: nothing is read.
class NameOnlyIconProvider : public QAbstractFileIconProvider {
public:
    QIcon icon(IconType type) const override {
        return QApplication::style()->standardIcon(type == Folder ? QStyle::SP_DirIcon : QStyle::SP_FileIcon);
    }
    QIcon icon(const QFileInfo& info) const override {
        return QApplication::style()->standardIcon(info.isDir() ? QStyle::SP_DirIcon : QStyle::SP_FileIcon);
    }
    QString type(const QFileInfo& info) const override {
        if (info.isDir()) return QApplication::translate("FileDialogs", "Folder");
        const QString suffix = info.suffix();
        return suffix.isEmpty() ? QApplication::translate("FileDialogs", "File")
                                : QApplication::translate("FileDialogs", "%1 file").arg(suffix);
    }
};

QString run(QFileDialog& dialog) {
    FileDialogs::prepare(dialog);
    if (dialog.exec() != QDialog::Accepted) return {};
    return dialog.selectedFiles().value(0);
}

} // namespace

void FileDialogs::prepare(QFileDialog& dialog) {
    static NameOnlyIconProvider provider;
    dialog.setOption(QFileDialog::DontUseNativeDialog, true);
    dialog.setOption(QFileDialog::DontUseCustomDirectoryIcons, true);
    dialog.setIconProvider(&provider);
}

QString FileDialogs::openFile(QWidget* parent, const QString& caption, const QString& start, const QString& filter) {
    QFileDialog dialog(parent, caption, start, filter);
    dialog.setAcceptMode(QFileDialog::AcceptOpen);
    dialog.setFileMode(QFileDialog::ExistingFile);
    return run(dialog);
}

QString FileDialogs::saveFile(QWidget* parent, const QString& caption, const QString& start, const QString& filter,
                              bool confirmOverwrite) {
    QFileDialog dialog(parent, caption, start, filter);
    dialog.setAcceptMode(QFileDialog::AcceptSave);
    dialog.setFileMode(QFileDialog::AnyFile);
    dialog.setOption(QFileDialog::DontConfirmOverwrite, !confirmOverwrite);
    return run(dialog);
}

QString FileDialogs::existingDirectory(QWidget* parent, const QString& caption, const QString& start) {
    QFileDialog dialog(parent, caption, start);
    dialog.setAcceptMode(QFileDialog::AcceptOpen);
    dialog.setFileMode(QFileDialog::Directory);
    dialog.setOption(QFileDialog::ShowDirsOnly, true);
    return run(dialog);
}

} // namespace parallax

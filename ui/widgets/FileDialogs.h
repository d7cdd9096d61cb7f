#pragma once

#include <QString>

class QFileDialog;
class QWidget;

namespace parallax {

// Every file dialog of the console. Qt's own dialog, because it can be told to look at names
// only: the stock one (and a desktop's dialog that runs inside this process) opens files to guess
// their type for an icon. Opening and closing any file of the store drops every SQLite lock this
// process holds on it (POSIX locks belong to the process), which leaves the console's reads
// unprotected from the supervisors' checkpoints; specs are commonly kept beside the store.
namespace FileDialogs {

QString openFile(QWidget* parent, const QString& caption, const QString& start, const QString& filter);
// confirmOverwrite = false for a store, which is opened when it exists.
QString saveFile(QWidget* parent, const QString& caption, const QString& start, const QString& filter,
                 bool confirmOverwrite = true);
QString existingDirectory(QWidget* parent, const QString& caption, const QString& start);

// What the functions above do to their dialog (for tests).
void prepare(QFileDialog& dialog);

} // namespace FileDialogs
} // namespace parallax

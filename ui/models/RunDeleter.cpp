#include "ui/models/RunDeleter.h"

#include "core/store/RunStore.h"
#include "ui/models/RunStoreThread.h"

#include <QDir>
#include <QFileInfo>

namespace parallax {

RunDeleter::RunDeleter(RunStoreThread* writer, QObject* parent) : QObject(parent), m_writer(writer) {}

bool RunDeleter::isOwnFolder(const QString& folder, qint64 id) {
    return !folder.isEmpty() && QFileInfo(folder).fileName() == QString::number(id) && QFileInfo(folder).isDir();
}

bool RunDeleter::deleteRun(const RunRecord& run, bool removeFolder, QString* error) {
    const qint64 id = run.id;
    if (!isTerminal(run.state)) {
        if (error)
            *error = tr("Run #%1 is %2; stop it on the Live page before deleting it")
                         .arg(id)
                         .arg(QString::fromStdString(runStateName(run.state)));
        return false;
    }
    if (!m_writer) {
        if (error) *error = tr("No store is open");
        return false;
    }
    const QString folder = QString::fromStdString(run.run_dir);
    m_writer->write(
        [id](RunStore& store) { store.deleteRun(id); }, this,
        [this, id, folder, removeFolder] {
            if (removeFolder && isOwnFolder(folder, id)) QDir(folder).removeRecursively();
            emit deleted(id);
        },
        [this, id](const QString& message) { emit failed(id, message); });
    return true;
}

} // namespace parallax

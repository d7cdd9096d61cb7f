#pragma once

#include "core/store/StoreTypes.h"

#include <QObject>
#include <QPointer>
#include <QString>

namespace parallax {

class RunStoreThread;

// Deletes a run's rows on the store's thread (RunStore::deleteRun) and, when asked, its own folder
// (<runs root>/<id>, checkpoints and output.log) once the rows are gone. A run still going is
// refused: its supervisor is still writing its rows.
class RunDeleter : public QObject {
    Q_OBJECT
public:
    explicit RunDeleter(RunStoreThread* writer, QObject* parent = nullptr);

    // Queues the deletion of `run`; deleted() or failed() follow. False (and `error` says why)
    // when it is refused at once.
    bool deleteRun(const RunRecord& run, bool removeFolder, QString* error = nullptr);

    // Whether `folder` is the run's own, the only kind removed: named after the run's id.
    static bool isOwnFolder(const QString& folder, qint64 id);

signals:
    void deleted(qint64 id);
    void failed(qint64 id, const QString& message);

private:
    QPointer<RunStoreThread> m_writer;
};

} // namespace parallax

#pragma once

#include <QObject>
#include <QPointer>
#include <QString>

namespace parallax {

class StoreWatcher;

// A run's data written to files, read from the store on the watcher's thread: its step metrics as
// CSV (the columns of `parallax-cli metrics --csv`) and its trace for Perfetto (`parallax-cli
// trace`). Each export ends in finished() with a line for the status bar, or failed().
class RunExporter : public QObject {
    Q_OBJECT
public:
    explicit RunExporter(StoreWatcher* watcher, QObject* parent = nullptr);

    void exportMetrics(qint64 id, const QString& path);
    void exportTrace(qint64 id, const QString& path);

signals:
    void finished(const QString& path, const QString& message);
    void failed(const QString& message);

private:
    QPointer<StoreWatcher> m_watcher;
};

} // namespace parallax

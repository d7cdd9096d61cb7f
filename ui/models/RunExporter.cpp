#include "ui/models/RunExporter.h"

#include "core/store/TraceExport.h"
#include "ui/models/AtomicFile.h"
#include "ui/models/RunMetricsCsv.h"
#include "ui/models/StoreWatcher.h"

#include <sstream>

namespace parallax {

RunExporter::RunExporter(StoreWatcher* watcher, QObject* parent) : QObject(parent), m_watcher(watcher) {}

void RunExporter::exportMetrics(qint64 id, const QString& path) {
    if (!m_watcher) {
        emit failed(tr("No store is open"));
        return;
    }
    m_watcher->read<std::vector<StepEvent>>(
        this, [id](const RunStore& store) { return store.metrics(id); },
        [this, path, id](std::vector<StepEvent> rows) {
            QString error;
            if (!writeFileAtomically(path, QByteArray::fromStdString(runMetricsCsv(rows)), &error)) {
                emit failed(error);
                return;
            }
            emit finished(path, tr("Wrote %n step(s) of run #%1 to %2", nullptr, int(rows.size())).arg(id).arg(path));
        },
        [this](const QString& message) { emit failed(message); });
}

void RunExporter::exportTrace(qint64 id, const QString& path) {
    if (!m_watcher) {
        emit failed(tr("No store is open"));
        return;
    }
    struct Trace {
        std::string json;
        TraceCounts counts;
    };
    m_watcher->read<Trace>(
        this,
        [id](const RunStore& store) {
            std::ostringstream out;
            Trace t;
            t.counts = writeTrace(store, id, out);
            t.json = out.str();
            return t;
        },
        [this, path, id](Trace t) {
            QString error;
            if (!writeFileAtomically(path, QByteArray::fromStdString(t.json), &error)) {
                emit failed(error);
                return;
            }
            emit finished(path, tr("Wrote the trace of run #%1 (%2 spans, %3 steps, %4 log lines) to %5")
                                    .arg(id)
                                    .arg(t.counts.spans)
                                    .arg(t.counts.steps)
                                    .arg(t.counts.logs)
                                    .arg(path));
        },
        [this](const QString& message) { emit failed(message); });
}

} // namespace parallax

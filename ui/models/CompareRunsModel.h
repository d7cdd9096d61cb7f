#pragma once

#include "ui/models/CompareRun.h"

#include <QList>
#include <QObject>
#include <QPointer>
#include <QString>

#include <cstdint>
#include <vector>

namespace parallax {

class StoreWatcher;

// Loads the runs the Compare page overlays (CompareRun::load: record, spec, metrics, report,
// lineage) on the store watcher's thread. Each load() starts a new generation: only the answer
// to the newest one is announced, so checking and unchecking runs quickly never shows an older
// selection after a newer one.
class CompareRunsModel : public QObject {
    Q_OBJECT
public:
    explicit CompareRunsModel(StoreWatcher* watcher, QObject* parent = nullptr);

    // Whether there is a store to read from.
    bool hasStore() const { return !m_watcher.isNull(); }
    // Reads `ids` (in that order; runs not in the store are left out). No ids, or no store:
    // loaded() with nothing at once.
    void load(const QList<qint64>& ids);
    bool isLoading() const { return m_inFlight > 0; }
    uint64_t generation() const { return m_generation; }

    // The runs of the newest load, as last announced.
    const std::vector<CompareRun>& runs() const { return m_runs; }

signals:
    // runs() holds the answer to the newest load.
    void loaded();
    void failed(const QString& message);

private:
    QPointer<StoreWatcher> m_watcher;
    uint64_t m_generation = 0;
    int m_inFlight = 0;
    std::vector<CompareRun> m_runs;
};

} // namespace parallax

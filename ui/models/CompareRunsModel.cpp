#include "ui/models/CompareRunsModel.h"

#include "core/store/RunStore.h"
#include "ui/models/StoreWatcher.h"

#include <optional>
#include <utility>

namespace parallax {

CompareRunsModel::CompareRunsModel(StoreWatcher* watcher, QObject* parent) : QObject(parent), m_watcher(watcher) {}

void CompareRunsModel::load(const QList<qint64>& ids) {
    const uint64_t generation = ++m_generation;
    if (ids.isEmpty() || !m_watcher) {
        m_runs.clear();
        emit loaded();
        return;
    }
    const std::vector<qint64> wanted(ids.begin(), ids.end());
    ++m_inFlight;
    m_watcher->read<std::vector<CompareRun>>(
        this,
        [wanted](const RunStore& store) {
            std::vector<CompareRun> out;
            for (qint64 id : wanted)
                if (std::optional<CompareRun> run = CompareRun::load(store, id)) out.push_back(std::move(*run));
            return out;
        },
        [this, generation](std::vector<CompareRun> runs) {
            --m_inFlight;
            if (generation != m_generation) return;
            m_runs = std::move(runs);
            emit loaded();
        },
        [this, generation](const QString& message) {
            --m_inFlight;
            if (generation == m_generation) emit failed(message);
        });
}

} // namespace parallax

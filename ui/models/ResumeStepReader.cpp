#include "ui/models/ResumeStepReader.h"

#include "core/store/RunStore.h"
#include "ui/models/RunListModel.h"
#include "ui/models/StoreWatcher.h"

#include <algorithm>
#include <optional>
#include <vector>

namespace parallax {

ResumeStepReader::ResumeStepReader(RunListModel* runs, StoreWatcher* watcher, QObject* parent)
    : QObject(parent), m_runs(runs), m_watcher(watcher) {
    connect(m_runs, &QAbstractItemModel::modelReset, this, [this] { readRows(0, m_runs->rowCount() - 1); });
    connect(m_runs, &QAbstractItemModel::rowsInserted, this,
            [this](const QModelIndex&, int first, int last) { readRows(first, last); });
    connect(m_runs, &QAbstractItemModel::dataChanged, this, [this](const QModelIndex& from, const QModelIndex& to) {
        if (from.column() <= RunListModel::StepsColumn && to.column() >= RunListModel::StateColumn)
            readRows(from.row(), to.row());
    });
    readRows(0, m_runs->rowCount() - 1);
}

std::map<int64_t, int64_t> ResumeStepReader::read(const RunStore& store, const std::vector<int64_t>& ids) {
    std::map<int64_t, int64_t> steps;
    for (int64_t id : ids) {
        const std::optional<RunStartEvent> start = store.runStart(id);
        steps[id] = start ? start->start_step : 0;
    }
    return steps;
}

void ResumeStepReader::readRows(int first, int last) {
    if (!m_watcher) return;
    if (m_reading) {
        m_readAgain = true;
        return;
    }
    std::vector<int64_t> ids;
    first = std::max(first, 0);
    last = std::min(last, m_runs->rowCount() - 1);
    for (int row = first; row <= last; ++row) {
        const RunRecord& r = m_runs->record(row);
        // Once a step is recorded (or the run ended) its run_start is in: each run is read once.
        if (r.parent_run && !m_runs->hasResumeStep(r.id) && (r.last_step >= 0 || r.ended_at > 0)) ids.push_back(r.id);
    }
    if (ids.empty()) return;
    m_reading = true;
    m_watcher->read<std::map<int64_t, int64_t>>(
        this, [ids](const RunStore& store) { return read(store, ids); },
        [this](std::map<int64_t, int64_t> steps) {
            m_runs->setResumeSteps(steps);
            emit stepsRead(int(steps.size()));
            finished();
        },
        [this](const QString& message) {
            emit readFailed(message);
            finished();
        });
}

void ResumeStepReader::finished() {
    m_reading = false;
    if (m_readAgain) {
        m_readAgain = false;
        readRows(0, m_runs->rowCount() - 1);
    }
}

} // namespace parallax

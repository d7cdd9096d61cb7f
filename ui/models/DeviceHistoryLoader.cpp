#include "ui/models/DeviceHistoryLoader.h"

#include "ui/models/DeviceGridModel.h"
#include "ui/models/StoreWatcher.h"

#include <algorithm>

namespace parallax {

DeviceHistoryLoader::DeviceHistoryLoader(StoreWatcher* watcher, DeviceGridModel* model, QObject* parent)
    : QObject(parent), m_watcher(watcher), m_model(model) {
    if (m_model) {
        connect(m_model, &QAbstractItemModel::modelReset, this, &DeviceHistoryLoader::changed);
        connect(m_model, &QAbstractItemModel::dataChanged, this, &DeviceHistoryLoader::changed);
    }
    if (!m_watcher) return;
    connect(m_watcher, &StoreWatcher::runChanged, this, [this](const RunRecord& r) {
        if (r.id == m_run) m_floorT = r.created_at;
    });
    connect(m_watcher, &StoreWatcher::runStartLoaded, this, [this](qint64 run, const RunStartEvent& start) {
        if (run == m_run) m_floorStep = start.start_step;
    });
    // The run's history sent again: its window is new, and what was asked before it is stale.
    connect(m_watcher, &StoreWatcher::deviceSamplesAdded, this,
            [this](qint64 run, const std::vector<DeviceEvent>&, bool reset) {
                if (run != m_run || !reset) return;
                m_fromT.reset();
                m_askedT.reset();
                emit changed();
            });
    connect(m_watcher, &StoreWatcher::rankStepsAdded, this,
            [this](qint64 run, const std::vector<RankStepEvent>&, bool reset) {
                if (run != m_run || !reset) return;
                m_fromStep.reset();
                m_askedStep.reset();
                emit changed();
            });
    connect(m_watcher, &StoreWatcher::deviceSamplesLoaded, this,
            [this](qint64 run, double from, double, const std::vector<DeviceEvent>& rows) {
                if (run != m_run || m_askedT != from) return;
                m_askedT.reset();
                m_fromT = from;
                if (m_model) m_model->addOlderSamples(rows);
                emit changed();
            });
    connect(m_watcher, &StoreWatcher::rankStepsLoaded, this,
            [this](qint64 run, qint64 from, qint64, const std::vector<RankStepEvent>& rows) {
                if (run != m_run || m_askedStep != static_cast<int64_t>(from)) return;
                m_askedStep.reset();
                m_fromStep = from;
                if (m_model) m_model->addOlderRankSteps(rows);
                emit changed();
            });
}

void DeviceHistoryLoader::setRun(qint64 run) {
    m_run = run;
    m_floorT = 0;
    m_floorStep = 0;
    m_fromT.reset();
    m_fromStep.reset();
    m_askedT.reset();
    m_askedStep.reset();
    emit changed();
}

std::optional<double> DeviceHistoryLoader::timeFrom() const {
    if (m_fromT) return m_fromT;
    if (m_model && !m_model->histories().empty()) return m_model->firstTime();
    return std::nullopt;
}

std::optional<int64_t> DeviceHistoryLoader::stepFrom() const {
    if (m_fromStep) return m_fromStep;
    return m_model ? m_model->firstStep() : std::nullopt;
}

bool DeviceHistoryLoader::canLoadEarlier() const {
    if (!m_watcher || m_run <= 0 || m_askedT || m_askedStep) return false;
    const std::optional<double> t = timeFrom();
    const std::optional<int64_t> step = stepFrom();
    return (t && *t > m_floorT) || (step && *step > m_floorStep);
}

void DeviceHistoryLoader::loadEarlier() {
    if (!canLoadEarlier()) return;
    if (const std::optional<double> t = timeFrom(); t && *t > m_floorT) {
        m_askedT = std::max(m_floorT, *t - StoreWatcher::kOpenWindowSeconds);
        m_watcher->loadDeviceSamples(m_run, *m_askedT, *t);
    }
    if (const std::optional<int64_t> step = stepFrom(); step && *step > m_floorStep) {
        m_askedStep = std::max(m_floorStep, *step - StoreWatcher::kOpenRankSteps);
        m_watcher->loadRankSteps(m_run, *m_askedStep, *step);
    }
    emit changed();
}

} // namespace parallax

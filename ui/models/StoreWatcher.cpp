#include "ui/models/StoreWatcher.h"

#include "ui/models/StoreWatcherWorker.h"

#include <QMetaObject>

#include <algorithm>

namespace parallax {

StoreWatcher::StoreWatcher(const QString& storePath, QObject* parent)
    : QObject(parent), m_path(storePath) {
    qRegisterMetaType<parallax::RunRecord>();
    qRegisterMetaType<parallax::RunStartEvent>();
    qRegisterMetaType<std::vector<parallax::RunRecord>>();
    qRegisterMetaType<std::vector<parallax::StepEvent>>();
    qRegisterMetaType<std::vector<parallax::DeviceEvent>>();
    qRegisterMetaType<std::vector<parallax::SpanEvent>>();
    qRegisterMetaType<std::vector<parallax::LogRow>>();
    qRegisterMetaType<std::vector<parallax::HostStatus>>();
    qRegisterMetaType<std::vector<parallax::RankStepEvent>>();
    qRegisterMetaType<std::vector<parallax::RunAlert>>();
    qRegisterMetaType<parallax::SlurmJob>();

    m_thread.setObjectName(QStringLiteral("StoreWatcher"));
    m_worker = new StoreWatcherWorker(m_path, m_interval, m_spanListeners);
    m_worker->moveToThread(&m_thread);
    // The worker's signals cross threads, so they arrive queued, in this object's thread.
    connect(m_worker, &StoreWatcherWorker::runsChanged, this, &StoreWatcher::runsChanged);
    connect(m_worker, &StoreWatcherWorker::runChanged, this, &StoreWatcher::runChanged);
    connect(m_worker, &StoreWatcherWorker::runStartLoaded, this, &StoreWatcher::runStartLoaded);
    connect(m_worker, &StoreWatcherWorker::metricsAdded, this, &StoreWatcher::metricsAdded);
    connect(m_worker, &StoreWatcherWorker::deviceSamplesAdded, this, &StoreWatcher::deviceSamplesAdded);
    connect(m_worker, &StoreWatcherWorker::spansAdded, this, &StoreWatcher::spansAdded);
    connect(m_worker, &StoreWatcherWorker::logsAdded, this, &StoreWatcher::logsAdded);
    connect(m_worker, &StoreWatcherWorker::hostStatusesChanged, this, &StoreWatcher::hostStatusesChanged);
    connect(m_worker, &StoreWatcherWorker::rankStepsAdded, this, &StoreWatcher::rankStepsAdded);
    connect(m_worker, &StoreWatcherWorker::alertsChanged, this, &StoreWatcher::alertsChanged);
    connect(m_worker, &StoreWatcherWorker::slurmJobChanged, this, &StoreWatcher::slurmJobChanged);
    connect(m_worker, &StoreWatcherWorker::unfollowedBatchRuns, this, &StoreWatcher::unfollowedBatchRuns);
    connect(m_worker, &StoreWatcherWorker::polled, this, &StoreWatcher::polled);
    connect(m_worker, &StoreWatcherWorker::storeError, this, &StoreWatcher::storeError);
    m_thread.start();
    StoreWatcherWorker* worker = m_worker;
    QMetaObject::invokeMethod(m_worker, [worker] { worker->start(); }, Qt::QueuedConnection);
}

StoreWatcher::~StoreWatcher() {
    // Deleted in its own thread, where its timer and store connection were made.
    StoreWatcherWorker* worker = m_worker;
    QMetaObject::invokeMethod(m_worker, [worker] { delete worker; }, Qt::BlockingQueuedConnection);
    m_thread.quit();
    m_thread.wait();
}

void StoreWatcher::setInterval(int milliseconds) {
    m_interval = std::max(1, milliseconds);
    StoreWatcherWorker* worker = m_worker;
    const int ms = m_interval;
    QMetaObject::invokeMethod(m_worker, [worker, ms] { worker->setInterval(ms); }, Qt::QueuedConnection);
}

void StoreWatcher::watch(qint64 run) {
    ++m_watchCount[run];
    StoreWatcherWorker* worker = m_worker;
    QMetaObject::invokeMethod(m_worker, [worker, run] { worker->watch(run, false); }, Qt::QueuedConnection);
}

void StoreWatcher::unwatch(qint64 run) {
    auto it = m_watchCount.find(run);
    if (it == m_watchCount.end()) return;
    if (--it->second == 0) m_watchCount.erase(it);
    StoreWatcherWorker* worker = m_worker;
    QMetaObject::invokeMethod(m_worker, [worker, run] { worker->unwatch(run, false); }, Qt::QueuedConnection);
}

void StoreWatcher::watchLogs(qint64 run) {
    ++m_watchCount[run];
    StoreWatcherWorker* worker = m_worker;
    QMetaObject::invokeMethod(m_worker, [worker, run] { worker->watch(run, true); }, Qt::QueuedConnection);
}

void StoreWatcher::unwatchLogs(qint64 run) {
    auto it = m_watchCount.find(run);
    if (it == m_watchCount.end()) return;
    if (--it->second == 0) m_watchCount.erase(it);
    StoreWatcherWorker* worker = m_worker;
    QMetaObject::invokeMethod(m_worker, [worker, run] { worker->unwatch(run, true); }, Qt::QueuedConnection);
}

bool StoreWatcher::isWatching(qint64 run) const { return m_watchCount.count(run) > 0; }

void StoreWatcher::pollNow() {
    StoreWatcherWorker* worker = m_worker;
    QMetaObject::invokeMethod(m_worker, [worker] { worker->poll(true); }, Qt::QueuedConnection);
}

void StoreWatcher::loadDeviceSamples(qint64 run, double from, double until) {
    read<std::vector<DeviceEvent>>(
        this,
        [run, from, until](const RunStore& store) { return store.eventsBetween<DeviceEvent>(run, from, until); },
        [this, run, from, until](std::vector<DeviceEvent> rows) { emit deviceSamplesLoaded(run, from, until, rows); },
        [this](const QString& message) { emit storeError(message); });
}

void StoreWatcher::loadRankSteps(qint64 run, qint64 from, qint64 until) {
    read<std::vector<RankStepEvent>>(
        this,
        [run, from, until](const RunStore& store) {
            return store.eventsBetween<RankStepEvent>(run, static_cast<int64_t>(from), static_cast<int64_t>(until));
        },
        [this, run, from, until](std::vector<RankStepEvent> rows) { emit rankStepsLoaded(run, from, until, rows); },
        [this](const QString& message) { emit storeError(message); });
}

void StoreWatcher::connectNotify(const QMetaMethod& signal) {
    if (signal == QMetaMethod::fromSignal(&StoreWatcher::spansAdded)) ++*m_spanListeners;
}

void StoreWatcher::disconnectNotify(const QMetaMethod& signal) {
    // A disconnect() that names no signal passes an invalid method: the count stays, so that spans
    // are at worst read for no one, never withheld from a listener.
    if (signal == QMetaMethod::fromSignal(&StoreWatcher::spansAdded) && *m_spanListeners > 0) --*m_spanListeners;
}

void StoreWatcher::post(std::function<void(const RunStore*, const QString&)> job) {
    StoreWatcherWorker* worker = m_worker;
    QMetaObject::invokeMethod(
        m_worker, [worker, job = std::move(job)] { worker->runJob(job); }, Qt::QueuedConnection);
}

void StoreWatcher::deliver(std::function<void()> fn) {
    QMetaObject::invokeMethod(this, std::move(fn), Qt::QueuedConnection);
}

} // namespace parallax

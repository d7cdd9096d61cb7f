#include "ui/models/StoreWatcherWorker.h"

#include "ui/models/StoreWatcher.h"

#include "core/launch/ProcessTable.h"
#include "core/util/HostName.h"

#include <QTimer>

#include <algorithm>
#include <exception>
#include <limits>
#include <utility>

namespace parallax {

namespace {

// Samples of different ranks reach the store through different output pipes, so one written
// after another may carry an earlier time. Each poll re-reads this much before the newest sample
// seen and keeps, per rank, only what is newer than that rank's last sample.
constexpr double kDeviceLagSeconds = 2.0;
// The same holds for each rank's step rows: a poll re-reads this many steps before the newest.
constexpr int64_t kRankStepLag = 4;

bool sameRecord(const RunRecord& a, const RunRecord& b) {
    return a.id == b.id && a.name == b.name && a.spec_toml == b.spec_toml && a.state == b.state &&
           a.created_at == b.created_at && a.started_at == b.started_at &&
           a.ended_at == b.ended_at && a.hosts == b.hosts && a.world_size == b.world_size &&
           a.exit_code == b.exit_code && a.exit_reason == b.exit_reason &&
           a.supervisor_pid == b.supervisor_pid && a.supervisor_host == b.supervisor_host &&
           a.parent_run == b.parent_run && a.tags == b.tags && a.notes == b.notes &&
           a.run_dir == b.run_dir && a.launch_command == b.launch_command &&
           a.model_kind == b.model_kind && a.layout == b.layout && a.params == b.params &&
           a.steps_total == b.steps_total && a.last_step == b.last_step &&
           a.last_loss == b.last_loss && a.tokens_per_s == b.tokens_per_s && a.mfu == b.mfu;
}

bool sameRuns(const std::vector<RunRecord>& a, const std::vector<RunRecord>& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), sameRecord);
}

bool sameHostStatus(const HostStatus& a, const HostStatus& b) {
    return a.host == b.host && a.state == b.state && a.last_answer == b.last_answer && a.latency_ms == b.latency_ms &&
           a.detail == b.detail && a.t == b.t;
}

// Rows of several ranks re-read from before the newest seen: keeps, per rank, those past what
// that rank last sent (`key` of a row: its time or step), and moves each rank's mark on.
template <typename Row, typename Key>
void keepUnsent(std::vector<Row>& rows, std::map<int, Key>& lastOfRank, Key (*key)(const Row&), bool reset) {
    if (!reset) {
        rows.erase(std::remove_if(rows.begin(), rows.end(),
                                  [&](const Row& e) {
                                      auto it = lastOfRank.find(e.rank);
                                      return it != lastOfRank.end() && key(e) <= it->second;
                                  }),
                   rows.end());
    }
    for (const Row& e : rows) {
        auto [it, added] = lastOfRank.try_emplace(e.rank, key(e));
        if (!added) it->second = std::max(it->second, key(e));
    }
}

double sampleTime(const DeviceEvent& e) { return e.t; }
int64_t stepOf(const RankStepEvent& e) { return e.step; }

// Whether `now` differs from what was last sent (nothing sent yet counts as a difference).
template <typename T, typename Same>
bool changedSince(const std::optional<std::vector<T>>& sent, const std::vector<T>& now, Same same) {
    return !sent || now.size() != sent->size() || !std::equal(now.begin(), now.end(), sent->begin(), same);
}

bool sameAlert(const RunAlert& a, const RunAlert& b) {
    return a.kind == b.kind && a.message == b.message && a.since == b.since && a.active == b.active;
}

} // namespace

StoreWatcherWorker::StoreWatcherWorker(QString storePath, int intervalMs,
                                       std::shared_ptr<const std::atomic<int>> spanListeners)
    : m_path(std::move(storePath)), m_interval(intervalMs), m_spanListeners(std::move(spanListeners)) {}

StoreWatcherWorker::~StoreWatcherWorker() = default;

void StoreWatcherWorker::start() {
    m_timer = new QTimer(this);
    m_timer->setTimerType(Qt::PreciseTimer);
    connect(m_timer, &QTimer::timeout, this, [this] { poll(false); });
    m_timer->start(m_interval);
    poll(true);
}

void StoreWatcherWorker::setInterval(int milliseconds) {
    m_interval = std::max(1, milliseconds);
    if (m_timer) m_timer->start(m_interval);
}

void StoreWatcherWorker::watch(qint64 run, bool logsOnly) {
    Watched& w = m_watched[run];
    if (logsOnly) {
        ++w.logRefs;
    } else {
        ++w.refs;
        w.reset = true;
    }
    w.resendRecord = true;
    poll(false);
}

void StoreWatcherWorker::unwatch(qint64 run, bool logsOnly) {
    auto it = m_watched.find(run);
    if (it == m_watched.end()) return;
    Watched& w = it->second;
    if (logsOnly) {
        w.logRefs = std::max(0, w.logRefs - 1);
    } else {
        w.refs = std::max(0, w.refs - 1);
    }
    if (w.refs == 0 && w.logRefs == 0) m_watched.erase(it);
}

bool StoreWatcherWorker::open() {
    if (m_store) return true;
    try {
        m_store = std::make_unique<RunStore>(m_path.toStdString());
        // A reader waits for a checkpoint or a migration briefly; a poll must not hang for long.
        m_store->setBusyTimeout(2000);
    } catch (const std::exception& e) {
        reportError(QString::fromStdString(e.what()));
        return false;
    }
    try {
        // Said once, when the console opens the store (on this thread: it reads every page); what
        // can still be read is shown.
        m_store->requireIntact();
    } catch (const std::exception& e) {
        reportError(QString::fromStdString(e.what()));
    }
    return true;
}

void StoreWatcherWorker::reportError(const QString& message) {
    // A broken store fails every poll; say so once, not ten times a second.
    if (message == m_lastError) return;
    m_lastError = message;
    emit storeError(message);
}

void StoreWatcherWorker::poll(bool force) {
    if (!open()) return;
    try {
        const int64_t version = m_store->dataVersion();
        const bool changed = !m_version || version != *m_version;
        const bool resets = std::any_of(m_watched.begin(), m_watched.end(), [](const auto& kv) {
            return kv.second.reset || kv.second.resendRecord;
        });
        if (changed) m_runsStale = true;
        const bool runsDue = m_runsStale && (force || !m_runsKnown || !m_sinceRuns.isValid() ||
                                             m_sinceRuns.elapsed() >= StoreWatcher::kRunsIntervalMs);
        if (!changed && !force && !resets && !runsDue) return;
        m_version = version;

        if (runsDue) {
            std::vector<RunRecord> runs = m_store->listRuns();
            m_runsStale = false;
            m_sinceRuns.start();
            if (!m_runsKnown || !sameRuns(runs, m_runs)) {
                m_runs = std::move(runs);
                m_runsKnown = true;
                emit runsChanged(m_runs);
            }
        }
        // Slurm batch jobs of this host whose supervisor is gone: the console has them followed
        // again (their job goes on without one).
        if (!m_sinceBatchCheck.isValid() || m_sinceBatchCheck.elapsed() >= StoreWatcher::kRunsIntervalMs) {
            m_sinceBatchCheck.start();
            const std::vector<int64_t> ids = m_store->unfollowedBatchRuns(
                hostName(), [](int64_t pid) { return processIsRunning(static_cast<pid_t>(pid)); });
            if (!ids.empty()) emit unfollowedBatchRuns(QList<qint64>(ids.begin(), ids.end()));
        }
        bool more = false;
        for (auto& [id, w] : m_watched) {
            if (changed || force || w.reset || w.resendRecord) more = pollRun(id, w) || more;
        }
        m_lastError.clear();
        emit polled(version);
        if (more) QTimer::singleShot(0, this, [this] { poll(true); });
    } catch (const std::exception& e) {
        reportError(QString::fromStdString(e.what()));
    }
}

bool StoreWatcherWorker::pollRun(qint64 id, Watched& w) {
    const bool reset = w.reset && w.refs > 0;
    const bool resend = w.resendRecord || reset;
    w.resendRecord = false;
    w.reset = false;
    const std::optional<RunRecord> record = m_store->run(id);
    if (!record) return false; // deleted, or not created yet
    if (resend || !w.record || !sameRecord(*record, *w.record)) {
        w.record = record;
        emit runChanged(*record);
    }
    if (resend) w.runStartSent = false;
    if (!w.runStartSent) {
        if (std::optional<RunStartEvent> start = m_store->runStart(id)) {
            w.runStartSent = true;
            emit runStartLoaded(id, *start);
        }
    }

    if (w.refs > 0) pollTelemetry(id, w, *record, reset);
    return pollLogs(id, w);
}

// A fully watched run's rows since the last poll (its last window on a reset): metrics, device
// samples, spans, host statuses, rank steps, alerts and its Slurm job.
void StoreWatcherWorker::pollTelemetry(qint64 id, Watched& w, const RunRecord& record, bool reset) {
    if (reset) {
        w.lastStep = -1;
        w.lastDeviceT = 0;
        w.lastRankT.clear();
        w.lastSpanStep = -1;
        w.spansSent = false;
        w.lastRankStep = -1;
        w.lastStepOfRank.clear();
    }
    // One row per step, a few hundred bytes a step in the curves: sent whole.
    std::vector<StepEvent> metrics = m_store->metrics(id, w.lastStep);
    if (!metrics.empty()) w.lastStep = metrics.back().step;
    if (reset || !metrics.empty()) emit metricsAdded(id, metrics, reset);

    pollDeviceSamples(id, w, reset);
    pollSpans(id, w, record, reset);
    pollRankSteps(id, w, reset);
    pollStatus(id, w, reset);
}

void StoreWatcherWorker::pollDeviceSamples(qint64 id, Watched& w, bool reset) {
    std::vector<DeviceEvent> samples;
    if (reset) {
        // The samples of the last kOpenWindowSeconds before the newest; older ones on request.
        if (const std::optional<double> newest = m_store->lastEventKey<DeviceEvent>(id))
            samples = m_store->eventsBetween<DeviceEvent>(id, *newest - StoreWatcher::kOpenWindowSeconds,
                                                          std::numeric_limits<double>::max());
    } else {
        samples = m_store->deviceSamples(id, std::max(0.0, w.lastDeviceT - kDeviceLagSeconds));
    }
    keepUnsent(samples, w.lastRankT, &sampleTime, reset);
    for (const DeviceEvent& e : samples) w.lastDeviceT = std::max(w.lastDeviceT, e.t);
    if (reset || !samples.empty()) emit deviceSamplesAdded(id, samples, reset);
}

void StoreWatcherWorker::pollSpans(qint64 id, Watched& w, const RunRecord& record, bool reset) {
    // Nobody listens: nothing is read. A listener that comes later gets the newest steps anew.
    if (m_spanListeners->load() == 0) {
        w.spansSent = false;
        return;
    }
    if (!w.spansSent) {
        reset = true;
        w.lastSpanStep = -1;
    }
    // The newest step's spans may still be arriving from some ranks.
    const std::vector<int64_t> steps = m_store->spanSteps(id);
    const bool ended = isTerminal(record.state);
    const size_t first = reset && steps.size() > StoreWatcher::kOpenSpanSteps ? steps.size() - StoreWatcher::kOpenSpanSteps : 0;
    std::vector<SpanEvent> spans;
    for (size_t i = first; i < steps.size(); ++i) {
        const int64_t step = steps[i];
        if (step <= w.lastSpanStep || (!ended && step == steps.back())) continue;
        std::vector<SpanEvent> s = m_store->spans(id, step);
        spans.insert(spans.end(), s.begin(), s.end());
        w.lastSpanStep = step;
    }
    w.spansSent = true;
    if (reset || !spans.empty()) emit spansAdded(id, spans, reset);
}

void StoreWatcherWorker::pollRankSteps(qint64 id, Watched& w, bool reset) {
    std::vector<RankStepEvent> rankSteps;
    if (reset) {
        // Each rank's last kOpenRankSteps steps; older ones on request.
        if (const std::optional<double> last = m_store->lastEventKey<RankStepEvent>(id))
            rankSteps = m_store->eventsBetween<RankStepEvent>(
                id, static_cast<int64_t>(*last) - StoreWatcher::kOpenRankSteps + 1, std::numeric_limits<int64_t>::max());
    } else {
        rankSteps = m_store->events<RankStepEvent>(id, std::max<int64_t>(-1, w.lastRankStep - kRankStepLag));
    }
    keepUnsent(rankSteps, w.lastStepOfRank, &stepOf, reset);
    for (const RankStepEvent& e : rankSteps) w.lastRankStep = std::max(w.lastRankStep, e.step);
    if (reset || !rankSteps.empty()) emit rankStepsAdded(id, rankSteps, reset);
}

void StoreWatcherWorker::pollStatus(qint64 id, Watched& w, bool reset) {
    std::vector<HostStatus> hosts = m_store->hostStatuses(id);
    if (reset || changedSince(w.hostStatuses, hosts, sameHostStatus)) {
        w.hostStatuses = hosts;
        emit hostStatusesChanged(id, hosts);
    }

    // Alerts are sent whole (one row per kind), only when one changed.
    std::vector<RunAlert> alerts = m_store->alerts(id);
    if (reset || changedSince(w.alerts, alerts, sameAlert)) {
        w.alerts = alerts;
        emit alertsChanged(id, alerts);
    }

    // A run on Slurm: its job's state, reason, place in the queue and time left.
    if (const std::optional<SlurmJob> job = m_store->slurmJob(id)) {
        const bool same = w.slurmJob && w.slurmJob->t == job->t && w.slurmJob->state == job->state;
        if (reset || !same) {
            w.slurmJob = job;
            emit slurmJobChanged(id, *job);
        }
    }
}

// Log history is not sent, so a later watch need not restart the high-water mark: every
// line after the first watch reaches logsAdded exactly once.
bool StoreWatcherWorker::pollLogs(qint64 id, Watched& w) {
    bool more = false;
    if (!w.logsStarted) {
        LogQuery last;
        last.limit = 1;
        last.descending = true;
        const std::vector<LogRow> rows = m_store->logs(id, last);
        w.lastLogId = rows.empty() ? 0 : rows.front().id;
        w.logsStarted = true;
    } else {
        LogQuery q;
        q.after_id = w.lastLogId;
        q.limit = StoreWatcher::kMaxLogRowsPerPoll;
        std::vector<LogRow> rows = m_store->logs(id, q);
        if (!rows.empty()) {
            w.lastLogId = rows.back().id;
            more = static_cast<int64_t>(rows.size()) == q.limit;
            emit logsAdded(id, rows);
        }
    }
    return more;
}

void StoreWatcherWorker::runJob(const std::function<void(const RunStore*, const QString&)>& job) {
    if (!open()) {
        job(nullptr, m_lastError);
        return;
    }
    job(m_store.get(), QString());
}

} // namespace parallax

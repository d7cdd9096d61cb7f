#include "core/store/RunStore.h"

#include "core/store/HostRecords.h"
#include "core/store/LogIndex.h"
#include "core/store/LogQueries.h"
#include "core/store/LogTable.h"
#include "core/store/MetricTable.h"
#include "core/store/RunAlerts.h"
#include "core/store/RunAnnotations.h"
#include "core/store/RunLiveness.h"
#include "core/store/RunQueries.h"
#include "core/store/RunsTable.h"
#include "core/store/SlurmJobs.h"
#include "core/store/SpanTable.h"
#include "core/store/StoreConnection.h"
#include "core/store/StoreInfo.h"
#include "core/store/TelemetryTables.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <limits>

namespace parallax {

// The parts, each keeping the rows of one concern, on the one connection. Declared in this order so
// that the connection is opened (and the schema migrated) first and closed last.
struct RunStore::Parts {
    explicit Parts(const std::string& path) : connection(path) {}

    StoreConnection connection;
    StoreInfo info{connection};                   // identity, settings, version, health
    RunsTable runs{connection};                   // a run's row as it goes
    RunQueries queries{connection};               // runs by id, name, lineage, filters
    RunLiveness liveness{connection};             // supervisors, lost and unfollowed runs
    RunAnnotations annotations{connection};       // tags and notes
    HostRecords hosts{connection};                // host liveness, pending cleanups
    RunAlerts alerts{connection};                 // hangs, stragglers
    SlurmJobs slurmJobs{connection};              // the Slurm job of a run
    TelemetryTables tables{connection};           // events in generated tables
    MetricTable metrics{connection};              // steps, in packed chunks
    SpanTable spans{connection};                  // pipeline spans, in packed chunks
    LogTable logs{connection};                    // log lines and their full-text index
    LogQueries logQueries{connection, logs};      // log searches and counts
};

RunStore::RunStore(const std::string& path) : m_parts(std::make_unique<Parts>(path)) {}
RunStore::~RunStore() = default;

const std::string& RunStore::path() const { return m_parts->connection.path(); }

std::string RunStore::defaultPath() {
    std::string base;
    const char* xdg = std::getenv("XDG_DATA_HOME");
    if (xdg && *xdg == '/') {
        base = xdg;
    } else {
        const char* home = std::getenv("HOME");
        std::string h = home && *home ? home : "";
        if (h.empty()) {
            if (const passwd* pw = getpwuid(getuid())) h = pw->pw_dir ? pw->pw_dir : "";
        }
        if (h.empty()) h = ".";
        base = h + "/.local/share";
    }
    return base + "/parallax/parallax.db";
}

void RunStore::setBusyTimeout(int milliseconds) {
    m_parts->connection.setBusyTimeout(milliseconds);
    m_parts->logs.setBusyTimeout(milliseconds);
}

// --- the store as a whole

int RunStore::schemaVersion() const { return m_parts->info.schemaVersion(); }
void RunStore::requireIntact() const { m_parts->info.requireIntact(); }
int64_t RunStore::dataVersion() const { return m_parts->info.dataVersion(); }
std::string RunStore::storeId() const { return m_parts->info.storeId(); }
std::optional<std::string> RunStore::storeInfo(const std::string& key) const { return m_parts->info.storeInfo(key); }
void RunStore::setStoreInfo(const std::string& key, const std::string& value) { m_parts->info.setStoreInfo(key, value); }

// --- runs

int64_t RunStore::createRun(const NewRun& run) { return m_parts->runs.createRun(run); }
void RunStore::setRunDir(int64_t id, const std::string& dir) { m_parts->runs.setRunDir(id, dir); }
void RunStore::relocateRunDir(int64_t id, const std::string& from, const std::string& to) {
    m_parts->runs.relocateRunDir(id, from, to);
}
void RunStore::setLaunchCommand(int64_t id, const std::string& command) { m_parts->runs.setLaunchCommand(id, command); }
void RunStore::setOutputOffset(int64_t id, int64_t offset) { m_parts->runs.setOutputOffset(id, offset); }
std::optional<int64_t> RunStore::outputOffset(int64_t id) const { return m_parts->runs.outputOffset(id); }
void RunStore::setRunStart(int64_t id, const RunStartEvent& start) { m_parts->runs.setRunStart(id, start); }
std::optional<RunStartEvent> RunStore::runStart(int64_t id) const { return m_parts->runs.runStart(id); }
void RunStore::updateSummary(int64_t id, const StepEvent& lastStep) { m_parts->runs.updateSummary(id, lastStep); }
void RunStore::finishRun(int64_t id, RunState state, std::optional<int> exitCode, const std::string& reason,
                         double endedAt) {
    m_parts->runs.finishRun(id, state, exitCode, reason, endedAt);
}
void RunStore::setStartedAt(int64_t id, double startedAt) { m_parts->runs.setStartedAt(id, startedAt); }
void RunStore::setTags(int64_t id, const std::vector<std::string>& tags) { m_parts->annotations.setTags(id, tags); }
void RunStore::setNotes(int64_t id, const std::string& notes) { m_parts->annotations.setNotes(id, notes); }

void RunStore::deleteRun(int64_t id) {
    // The lines leave the full-text index first; the index stays locked until the rows are gone
    // (see LogIndex::forgetRun).
    m_parts->logs.index().forgetRun(id, [&] {
        // One transaction, so that a reader sees the run whole or not at all.
        ImplicitTransaction tx(m_parts->connection);
        m_parts->metrics.deleteRunRows(id);
        m_parts->spans.deleteRunRows(id);
        m_parts->tables.deleteRunRows(id);
        m_parts->hosts.deleteRunRows(id);
        m_parts->alerts.deleteRunRows(id);
        m_parts->slurmJobs.deleteRunRows(id);
        m_parts->logs.deleteRunRows(id);
        m_parts->runs.deleteRunRows(id); // last: throws when there is no such run
        tx.commit();
    });
}

std::optional<RunRecord> RunStore::run(int64_t id) const { return m_parts->queries.run(id); }
std::vector<int64_t> RunStore::lineage(int64_t id) const { return m_parts->queries.lineage(id); }
std::optional<RunRecord> RunStore::latestRunNamed(const std::string& name) const {
    return m_parts->queries.latestRunNamed(name);
}
std::optional<RunRecord> RunStore::findRun(const std::string& idOrName) const { return m_parts->queries.findRun(idOrName); }
std::vector<RunRecord> RunStore::listRuns(const RunFilter& filter) const { return m_parts->queries.listRuns(filter); }

void RunStore::markRunning(int64_t id, int64_t supervisorPid, const std::string& supervisorHost) {
    m_parts->liveness.markRunning(id, supervisorPid, supervisorHost);
}
std::vector<int64_t> RunStore::markLostRuns(const std::string& host, const std::function<bool(int64_t pid)>& isAlive) {
    return m_parts->liveness.markLostRuns(host, isAlive);
}
std::vector<int64_t> RunStore::unfollowedBatchRuns(const std::string& host,
                                                   const std::function<bool(int64_t pid)>& isAlive) const {
    return m_parts->liveness.unfollowedBatchRuns(host, isAlive);
}
void RunStore::setSupervisor(int64_t id, int64_t supervisorPid, const std::string& supervisorHost) {
    m_parts->liveness.setSupervisor(id, supervisorPid, supervisorHost);
}

// --- what a run's supervisor records besides telemetry

void RunStore::setSlurmJob(int64_t run, const SlurmJob& job) { m_parts->slurmJobs.setSlurmJob(run, job); }
std::optional<SlurmJob> RunStore::slurmJob(int64_t run) const { return m_parts->slurmJobs.slurmJob(run); }
void RunStore::setAlert(int64_t run, const RunAlert& alert) { m_parts->alerts.setAlert(run, alert); }
std::vector<RunAlert> RunStore::alerts(int64_t run) const { return m_parts->alerts.alerts(run); }
void RunStore::setHostStatus(int64_t run, const HostStatus& status) { m_parts->hosts.setHostStatus(run, status); }
std::vector<HostStatus> RunStore::hostStatuses(int64_t run) const { return m_parts->hosts.hostStatuses(run); }
void RunStore::addPendingCleanup(const PendingCleanup& c) { m_parts->hosts.addPendingCleanup(c); }
void RunStore::removePendingCleanup(int64_t run, const std::string& host) {
    m_parts->hosts.removePendingCleanup(run, host);
}
void RunStore::notePendingCleanupAttempt(int64_t run, const std::string& host, const std::string& error) {
    m_parts->hosts.notePendingCleanupAttempt(run, host, error);
}
std::vector<PendingCleanup> RunStore::pendingCleanups() const { return m_parts->hosts.pendingCleanups(); }

// --- telemetry rows

void RunStore::beginTransaction() { m_parts->connection.begin(); }
void RunStore::commit() { m_parts->connection.commit(); }
void RunStore::rollback() { m_parts->connection.rollback(); }

void RunStore::insertEventRows(const EventTableSpec& spec, size_t rows,
                               const std::function<void(SqlStatement&, int base, size_t i)>& bindRow) {
    m_parts->tables.insert(spec, rows, bindRow);
}
void RunStore::selectEventRows(const EventTableSpec& spec, int64_t run, const SqlStatement::Value& after,
                               const std::function<void(const SqlStatement&)>& onRow,
                               const std::vector<std::string>& leftOut) const {
    m_parts->tables.select(spec, run, after, onRow, leftOut);
}
void RunStore::selectEventRange(const EventTableSpec& spec, int64_t run, const SqlStatement::Value& from,
                                const SqlStatement::Value& until,
                                const std::function<void(const SqlStatement&)>& onRow) const {
    m_parts->tables.selectRange(spec, run, from, until, onRow);
}
std::optional<double> RunStore::lastEventKeyOf(const EventTableSpec& spec, int64_t run) const {
    return m_parts->tables.lastKey(spec, run);
}
std::optional<double> RunStore::firstEventKeyOf(const EventTableSpec& spec, int64_t run) const {
    return m_parts->tables.firstKey(spec, run);
}
int64_t RunStore::deleteEventRange(const EventTableSpec& spec, int64_t run, double from, double until,
                                   const std::string& keep, const std::vector<int64_t>& kept) {
    std::string list = "[";
    for (size_t i = 0; i < kept.size(); ++i) list += (i ? "," : "") + std::to_string(kept[i]);
    list += "]";
    return m_parts->tables.deleteRange(spec, run, from, until, keep, list);
}
std::optional<double> RunStore::thinnedUntil(int64_t run, const std::string& event) const {
    return m_parts->tables.thinnedUntil(run, event);
}
void RunStore::setThinnedUntil(int64_t run, const std::string& event, double until) {
    m_parts->tables.setThinnedUntil(run, event, until);
}
void RunStore::insertEvents(int64_t run, const std::vector<TelemetryEvent>& rows) { m_parts->tables.insert(run, rows); }

void RunStore::insertMetric(int64_t run, const StepEvent& e) { insertMetrics(run, {e}); }
void RunStore::insertMetrics(int64_t run, const std::vector<StepEvent>& rows) { m_parts->metrics.insertMetrics(run, rows); }
std::vector<StepEvent> RunStore::metrics(int64_t run, int64_t afterStep) const {
    return m_parts->metrics.metrics(run, afterStep);
}

void RunStore::insertSpan(int64_t run, const SpanEvent& e) { insertSpans(run, {e}); }
void RunStore::insertSpans(int64_t run, const std::vector<SpanEvent>& rows) { m_parts->spans.insertSpans(run, rows); }
std::vector<int64_t> RunStore::spanSteps(int64_t run) const { return m_parts->spans.spanSteps(run); }
std::vector<SpanEvent> RunStore::spans(int64_t run, int64_t step) const { return m_parts->spans.spans(run, step); }

void RunStore::insertDeviceSample(int64_t run, const DeviceEvent& e) { insertEvents(run, std::vector<DeviceEvent>{e}); }
void RunStore::insertDeviceSamples(int64_t run, const std::vector<DeviceEvent>& rows) { insertEvents(run, rows); }
std::vector<DeviceEvent> RunStore::deviceSamples(int64_t run, double sinceT) const {
    // sinceT > 0: only samples after it (polling for new ones); otherwise all of them.
    std::vector<DeviceEvent> out;
    selectEventRows(eventTableSpec<DeviceEvent>(), run, sinceT > 0 ? sinceT : std::numeric_limits<double>::lowest(),
                    [&](const SqlStatement& s) { out.push_back(readEventRow<DeviceEvent>(s)); });
    return out;
}

void RunStore::insertComm(int64_t run, const CommEvent& e) { insertEvents(run, std::vector<CommEvent>{e}); }
void RunStore::insertComms(int64_t run, const std::vector<CommEvent>& rows) { insertEvents(run, rows); }
std::vector<CommEvent> RunStore::comms(int64_t run) const { return events<CommEvent>(run); }

void RunStore::insertCheckpoint(int64_t run, const CheckpointEvent& e) {
    insertEvents(run, std::vector<CheckpointEvent>{e});
}
std::vector<CheckpointEvent> RunStore::checkpoints(int64_t run) const { return events<CheckpointEvent>(run); }

// --- log lines

int64_t RunStore::insertLog(int64_t run, const LogRow& row) { return m_parts->logs.insertLog(run, row); }
void RunStore::insertLogs(int64_t run, const std::vector<LogRow>& rows) { m_parts->logs.insertLogs(run, rows); }
std::vector<LogRow> RunStore::logs(int64_t run, const LogQuery& q) const { return m_parts->logQueries.logs(run, q); }
int64_t RunStore::logCount(int64_t run, const LogQuery& q) const { return m_parts->logQueries.logCount(run, q); }
std::string RunStore::logIndexPath() const { return m_parts->logs.indexPath(); }
bool RunStore::indexLogs(int64_t run, int64_t maxLines) { return m_parts->logs.index().catchUp(run, maxLines); }
void RunStore::indexLogs() { m_parts->logs.index().catchUpAll(); }

} // namespace parallax

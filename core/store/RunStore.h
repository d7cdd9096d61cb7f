#pragma once

#include "core/store/EventTables.h"
#include "core/store/StoreTypes.h"

#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace parallax {

// The only code that touches SQLite. WAL mode, so the console's readers never block the
// supervisor's writer. Every statement is prepared and parameterized. Not thread-safe: one
// RunStore per thread (open the same file several times for several threads/processes).
//
// A facade: each call goes to the part that keeps its rows (RunStore.cpp lists them), all on one
// connection (StoreConnection).
class RunStore {
public:
    static constexpr int kSchemaVersion = 11;

    // Opens (creating parent folders and the file when missing) and migrates an older schema.
    // A database of a newer schema, or a file that is not a Parallax store, throws StoreError.
    explicit RunStore(const std::string& path);
    ~RunStore();
    RunStore(const RunStore&) = delete;
    RunStore& operator=(const RunStore&) = delete;

    const std::string& path() const;
    int schemaVersion() const;
    // PRAGMA quick_check: throws StoreDamaged naming what is wrong and how to recover when the file
    // is damaged. Reads every page (about a second per GB): done before a run starts writing and
    // when the console opens a store, not on every open.
    void requireIntact() const;
    // Changes whenever another connection commits (PRAGMA data_version); cheap polling for readers.
    int64_t dataVersion() const;
    static std::string defaultPath(); // $XDG_DATA_HOME/parallax/parallax.db (~/.local/share/...)
    // How long a statement waits for another connection's write lock before failing with
    // StoreError (15 s by default).
    void setBusyTimeout(int milliseconds);

    // A random identity given to the store when it is created (32 hex digits). A store made again
    // at the same path gets another one.
    std::string storeId() const;
    // Small settings of the store as a whole (e.g. which layout its run folders follow).
    std::optional<std::string> storeInfo(const std::string& key) const;
    void setStoreInfo(const std::string& key, const std::string& value);

    // --- runs
    // Updates of a run id that does not exist throw StoreError ("run N does not exist").
    int64_t createRun(const NewRun& run); // state queued; throws on an empty name or unknown parent
    void setRunDir(int64_t id, const std::string& dir);
    // The run's folder moved from `from` to `to`: its run_dir and the paths of its checkpoints
    // under `from`, in one transaction.
    void relocateRunDir(int64_t id, const std::string& from, const std::string& to);
    void setLaunchCommand(int64_t id, const std::string& command);
    // How many bytes of the run's output.log have their rows in the store: the supervisor records
    // it with each batch of rows, `parallax-cli import` imports what follows. Unset (std::nullopt)
    // for runs recorded before the store tracked it.
    void setOutputOffset(int64_t id, int64_t offset);
    std::optional<int64_t> outputOffset(int64_t id) const;
    // queued, running or lost -> running (the first call sets started_at); an ended run throws.
    void markRunning(int64_t id, int64_t supervisorPid, const std::string& supervisorHost);
    void setRunStart(int64_t id, const RunStartEvent& start); // hosts, world, params
    // The whole run_start event as setRunStart stored it (devices, clock offsets, peak FLOPs...).
    std::optional<RunStartEvent> runStart(int64_t id) const;
    // last_step, last_loss (a NaN loss reads back as NaN), tokens_per_s, mfu (none when <= 0).
    void updateSummary(int64_t id, const StepEvent& lastStep);
    // `state` must be final (isTerminal); sets ended_at to `endedAt` (seconds since the
    // epoch), or to now when it is 0: a writer that waited for the store says when the run ended.
    void finishRun(int64_t id, RunState state, std::optional<int> exitCode,
                   const std::string& reason, double endedAt = 0);
    // A run brought in from its folder (parallax-cli import DIR): when it started, from its output.
    void setStartedAt(int64_t id, double startedAt);
    void setTags(int64_t id, const std::vector<std::string>& tags);
    void setNotes(int64_t id, const std::string& notes);
    // The run and all its rows in one transaction (its lines leave the full-text index first);
    // runs resumed from it keep their rows and lose the parent link.
    void deleteRun(int64_t id); // and all its rows

    std::optional<RunRecord> run(int64_t id) const;
    // The lineage through run `id`: its parents up to the first, then its newest continuation, that
    // one's newest, and so on (one run: just it). In order, oldest first.
    std::vector<int64_t> lineage(int64_t id) const;
    std::optional<RunRecord> latestRunNamed(const std::string& name) const;
    // RUN given as an id or a name (the latest run of that name). A number that is no run's id
    // is tried as a name.
    std::optional<RunRecord> findRun(const std::string& idOrName) const;
    // Filtered and sorted in SQL; an unknown order_by throws StoreError listing the valid ones.
    std::vector<RunRecord> listRuns(const RunFilter& filter = {}) const;

    // Runs in queued/running state on `host` whose supervisor pid is not alive become lost.
    // Returns their ids. A run in a Slurm batch job is not lost with its supervisor (the job goes
    // on): see unfollowedBatchRuns.
    std::vector<int64_t> markLostRuns(const std::string& host,
                                      const std::function<bool(int64_t pid)>& isAlive);
    // Runs in queued/running state in a Slurm batch job whose supervisor on `host` is not alive (or
    // that never had one): nobody follows their job; `parallax-cli attach` does again.
    std::vector<int64_t> unfollowedBatchRuns(const std::string& host,
                                             const std::function<bool(int64_t pid)>& isAlive) const;
    // The supervisor that follows a run now, without changing its state (a queued batch job).
    void setSupervisor(int64_t id, int64_t supervisorPid, const std::string& supervisorHost);

    // --- the Slurm job of a run on Slurm (one per run; the latest replaces the earlier)
    void setSlurmJob(int64_t run, const SlurmJob& job);
    std::optional<SlurmJob> slurmJob(int64_t run) const;

    // --- events kept in a table generated from their fields (those with E::table(), Events.h:
    // device samples, comms, checkpoints, each rank's steps, unit and collective times)
    // A row with the key of an earlier row of the run replaces it. One transaction unless the caller
    // holds one.
    template <class E>
    void insertEvents(int64_t run, const std::vector<E>& rows) {
        insertEventRows(eventTableSpec<E>(), rows.size(),
                        [&](SqlStatement& s, int base, size_t i) { bindEventRow(s, run, rows[i], base); });
    }
    // Rows of events of any kind that has a generated table (others throw std::logic_error).
    void insertEvents(int64_t run, const std::vector<TelemetryEvent>& rows);
    // The run's rows whose first key field is above `after`, in key order (each rank's steps:
    // steps > after, by step and rank). None from a read-only store that predates the event.
    template <class E>
    std::vector<E> events(int64_t run, int64_t after = std::numeric_limits<int64_t>::min()) const {
        std::vector<E> out;
        selectEventRows(eventTableSpec<E>(), run, after, [&](const SqlStatement& s) { out.push_back(readEventRow<E>(s)); });
        return out;
    }
    // The same rows without reading the fields `leftOut` (they come back empty, 0 or NaN): a
    // listing of rows whose large fields (a sample's PNG) are read only where wanted. A field
    // stored after a large one is best left out as well, since reaching it reads the large one.
    template <class E>
    std::vector<E> eventsWithout(int64_t run, const std::vector<std::string>& leftOut,
                                 int64_t after = std::numeric_limits<int64_t>::min()) const {
        std::vector<E> out;
        selectEventRows(eventTableSpec<E>(), run, after, [&](const SqlStatement& s) { out.push_back(readEventRow<E>(s)); },
                        leftOut);
        return out;
    }
    // The run's rows whose first key field lies in [from, until), in key order: a stretch of a
    // long run (device samples by time, each rank's steps by step) without reading the rest.
    template <class E>
    std::vector<E> eventsBetween(int64_t run, const SqlStatement::Value& from, const SqlStatement::Value& until) const {
        std::vector<E> out;
        selectEventRange(eventTableSpec<E>(), run, from, until,
                         [&](const SqlStatement& s) { out.push_back(readEventRow<E>(s)); });
        return out;
    }
    // The run's largest first key field (its newest device sample's time, its last rank step),
    // read from the key's index alone; none when the run has no such rows.
    template <class E>
    std::optional<double> lastEventKey(int64_t run) const {
        return lastEventKeyOf(eventTableSpec<E>(), run);
    }

    // ... and its smallest.
    template <class E>
    std::optional<double> firstEventKey(int64_t run) const {
        return firstEventKeyOf(eventTableSpec<E>(), run);
    }
    // Deletes the run's rows whose first key field lies in [from, until), but those whose field
    // `keep` holds one of `kept`; returns how many went. For thinning (TelemetryThinning.h), inside
    // the caller's transaction together with the rows that stand for them.
    template <class E>
    int64_t deleteEventsBetween(int64_t run, double from, double until, const std::string& keep,
                                const std::vector<int64_t>& kept) {
        return deleteEventRange(eventTableSpec<E>(), run, from, until, keep, kept);
    }
    // How far the run's rows of `event` have been thinned; none: not yet.
    std::optional<double> thinnedUntil(int64_t run, const std::string& event) const;
    void setThinnedUntil(int64_t run, const std::string& event, double until);

    // --- alerts
    // The alert of `kind` raised (or said again: `since` is kept) or, with active = false, ended.
    void setAlert(int64_t run, const RunAlert& alert);
    std::vector<RunAlert> alerts(int64_t run) const; // by kind

    // --- hosts of runs on hosts
    // One row per (run, host): the latest replaces the earlier.
    void setHostStatus(int64_t run, const HostStatus& status);
    std::vector<HostStatus> hostStatuses(int64_t run) const; // by host
    void addPendingCleanup(const PendingCleanup& c);          // replaces one of the same run and host
    void removePendingCleanup(int64_t run, const std::string& host);
    void notePendingCleanupAttempt(int64_t run, const std::string& host, const std::string& error);
    std::vector<PendingCleanup> pendingCleanups() const;      // oldest first

    // --- telemetry rows (each call is one transaction; BatchedWriter groups calls)
    // Transactions are IMMEDIATE: the write lock is taken at begin, waiting up to the busy timeout.
    void beginTransaction();
    void commit();
    void rollback();
    // One row per step: a step written again replaces the earlier row.
    void insertMetric(int64_t run, const StepEvent& e);
    void insertDeviceSample(int64_t run, const DeviceEvent& e); // insertEvents, as are comms and checkpoints
    void insertSpan(int64_t run, const SpanEvent& e);
    void insertComm(int64_t run, const CommEvent& e);
    // Levels are normalized (see LogLevel.h). Lines enter the full-text index later (see
    // indexLogs); a search always finds every committed line.
    int64_t insertLog(int64_t run, const LogRow& row); // returns the row id
    // Several rows at once, several per statement (much faster per row); one transaction unless
    // the caller holds one.
    void insertLogs(int64_t run, const std::vector<LogRow>& rows);
    void insertMetrics(int64_t run, const std::vector<StepEvent>& rows);
    void insertDeviceSamples(int64_t run, const std::vector<DeviceEvent>& rows);
    void insertSpans(int64_t run, const std::vector<SpanEvent>& rows);
    void insertComms(int64_t run, const std::vector<CommEvent>& rows);
    void insertCheckpoint(int64_t run, const CheckpointEvent& e); // replaces one of its step and path

    // --- reads (NaN values written come back as NaN)
    std::vector<StepEvent> metrics(int64_t run, int64_t afterStep = -1) const; // steps > afterStep
    // Ordered by time; sinceT > 0: only samples with t > sinceT (polling), else all.
    std::vector<DeviceEvent> deviceSamples(int64_t run, double sinceT = 0) const;
    std::vector<int64_t> spanSteps(int64_t run) const;             // steps that have spans
    std::vector<SpanEvent> spans(int64_t run, int64_t step) const; // ordered by rank, start
    std::vector<CommEvent> comms(int64_t run) const; // ordered by time, rank
    // See LogQuery; an invalid full-text query or level throws StoreError saying how to write it.
    // A text search first indexes the run's lines committed since the last indexing (indexLogs),
    // so it finds every committed line; it does not see the rows of a transaction this store
    // holds open, since it runs on the log index's connection.
    std::vector<LogRow> logs(int64_t run, const LogQuery& q = {}) const;
    int64_t logCount(int64_t run, const LogQuery& q = {}) const; // ignores limit and offset
    std::vector<CheckpointEvent> checkpoints(int64_t run) const; // ordered by step, path

    // --- full-text index of log lines
    // Kept in a file of its own beside the store, <store path>.logindex (logIndexPath), created on
    // demand; a store in memory keeps it in memory (empty path). Deleting the file loses nothing:
    // it is rebuilt from the store as runs are searched. A damaged file throws StoreError naming
    // it. Indexing takes the index file's write lock only, never the store's, so it never delays
    // the rows' writer: BatchedWriter indexes on a thread of its own while a run streams logs.
    std::string logIndexPath() const;
    // Indexes `run`'s committed lines that are not yet in the index, in transactions of up to
    // 50,000 lines; stops after at most `maxLines` (< 0: no limit). Returns whether the run is
    // caught up. Two indexers (other connections, other processes) never index a line twice.
    bool indexLogs(int64_t run, int64_t maxLines = -1);
    // Catches up every run that has lines not yet in the index.
    void indexLogs();

private:
    struct Parts;
    // Binds row i of `rows` from parameter base + 1 on.
    void insertEventRows(const EventTableSpec& spec, size_t rows,
                         const std::function<void(SqlStatement&, int base, size_t i)>& bindRow);
    void selectEventRows(const EventTableSpec& spec, int64_t run, const SqlStatement::Value& after,
                         const std::function<void(const SqlStatement&)>& onRow,
                         const std::vector<std::string>& leftOut = {}) const;
    void selectEventRange(const EventTableSpec& spec, int64_t run, const SqlStatement::Value& from,
                          const SqlStatement::Value& until, const std::function<void(const SqlStatement&)>& onRow) const;
    std::optional<double> lastEventKeyOf(const EventTableSpec& spec, int64_t run) const;
    std::optional<double> firstEventKeyOf(const EventTableSpec& spec, int64_t run) const;
    int64_t deleteEventRange(const EventTableSpec& spec, int64_t run, double from, double until,
                             const std::string& keep, const std::vector<int64_t>& kept);
    std::unique_ptr<Parts> m_parts;
};

} // namespace parallax

#include "core/store/Schema.h"

#include "core/store/StoreTypes.h"

#include <sqlite3.h>

namespace parallax {

namespace {

// Schema 1. Conventions: every table of telemetry rows starts with `run`, so that its primary key
// or index serves both the per-run queries and RunStore::deleteRun, which deletes a run's rows
// table by table. (No foreign keys: enforcing them costs a lookup of the run on every inserted
// row, a third of the cost of a metric row.) Tables whose natural key is unique per run are
// WITHOUT ROWID: one b-tree to update per row instead of two. REAL columns hold NULL for NaN
// (SQLite has no NaN). runs.spec_toml is the last column so that listing and filtering runs reads
// the short columns before it.
const char* const kSchema1 = R"sql(
CREATE TABLE runs (
    id              INTEGER PRIMARY KEY AUTOINCREMENT, -- ids are never reused within a store
    name            TEXT    NOT NULL,
    state           TEXT    NOT NULL DEFAULT 'queued',
    created_at      REAL    NOT NULL,
    started_at      REAL    NOT NULL DEFAULT 0,
    ended_at        REAL    NOT NULL DEFAULT 0,
    hosts           TEXT    NOT NULL DEFAULT '[]',   -- JSON array of distinct host names
    world_size      INTEGER NOT NULL DEFAULT 1,
    exit_code       INTEGER,
    exit_reason     TEXT    NOT NULL DEFAULT '',
    supervisor_pid  INTEGER NOT NULL DEFAULT 0,
    supervisor_host TEXT    NOT NULL DEFAULT '',
    parent_run      INTEGER,                         -- set to NULL when that run is deleted
    tags            TEXT    NOT NULL DEFAULT '[]',   -- JSON array
    notes           TEXT    NOT NULL DEFAULT '',
    run_dir         TEXT    NOT NULL DEFAULT '',
    launch_command  TEXT    NOT NULL DEFAULT '',
    model_kind      TEXT    NOT NULL DEFAULT '',
    layout          TEXT    NOT NULL DEFAULT '',
    params          INTEGER NOT NULL DEFAULT 0,
    steps_total     INTEGER NOT NULL DEFAULT 0,
    last_step       INTEGER NOT NULL DEFAULT -1,
    last_loss       REAL,
    tokens_per_s    REAL,
    mfu             REAL,
    run_start       TEXT,                            -- the run_start event as JSON
    spec_toml       TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX runs_by_name ON runs(name);
CREATE INDEX runs_by_state ON runs(state, supervisor_host);
CREATE INDEX runs_by_parent ON runs(parent_run) WHERE parent_run IS NOT NULL;

CREATE TABLE metrics (
    run           INTEGER NOT NULL,
    step          INTEGER NOT NULL,
    t             REAL,
    loss          REAL,
    lr            REAL,
    grad_norm     REAL,
    tokens_per_s  REAL,
    samples_per_s REAL,
    step_ms       REAL,
    step_ms_min   REAL,
    step_ms_max   REAL,
    slowest_rank  INTEGER,
    mfu           REAL,
    tokens        INTEGER,
    peak_mem      REAL,
    PRIMARY KEY (run, step)
) WITHOUT ROWID;

CREATE TABLE device_samples (
    run          INTEGER NOT NULL,
    t            REAL    NOT NULL,
    rank         INTEGER NOT NULL,
    device       INTEGER NOT NULL,
    host         TEXT,
    util         REAL,
    mem_used     REAL,
    mem_total    REAL,
    power_w      REAL,
    temp_c       REAL,
    sm_clock_mhz REAL,
    cpu_pct      REAL,
    rss          REAL,
    PRIMARY KEY (run, t, rank, device)
) WITHOUT ROWID;

CREATE TABLE spans (
    run        INTEGER NOT NULL,
    step       INTEGER NOT NULL,
    rank       INTEGER NOT NULL,
    start      REAL    NOT NULL,
    stage      INTEGER NOT NULL,
    microbatch INTEGER NOT NULL,
    kind       TEXT    NOT NULL,
    end_t      REAL,
    PRIMARY KEY (run, step, rank, start, stage, microbatch, kind)
) WITHOUT ROWID;

CREATE TABLE comms (
    run         INTEGER NOT NULL,
    t           REAL    NOT NULL,
    rank        INTEGER NOT NULL,
    collectives INTEGER,
    bytes       INTEGER,
    last_seq    INTEGER,
    PRIMARY KEY (run, t, rank)
) WITHOUT ROWID;

CREATE TABLE checkpoints (
    id     INTEGER PRIMARY KEY,
    run    INTEGER NOT NULL,
    step   INTEGER NOT NULL,
    path   TEXT    NOT NULL,
    bytes  INTEGER,
    ms     REAL,
    layout TEXT,
    t      REAL
);
CREATE INDEX checkpoints_by_run ON checkpoints(run, step);

CREATE TABLE logs (
    id      INTEGER PRIMARY KEY,
    run     INTEGER NOT NULL,
    t       REAL,
    rank    INTEGER NOT NULL,
    host    TEXT,
    level   INTEGER NOT NULL,  -- LogLevel: debug 0, info 1, warn 2, error 3
    stream  TEXT,
    message TEXT    NOT NULL
);
CREATE INDEX logs_by_run ON logs(run);              -- (run, id): a run's lines in order
CREATE INDEX logs_by_rank ON logs(run, rank);       -- (run, rank, id): selected ranks
-- Warnings and errors are few, so this costs almost nothing to keep and makes "warn and above"
-- over millions of lines instant.
CREATE INDEX logs_warnings ON logs(run) WHERE level >= 2;

-- Full-text index over messages; the text itself lives only in `logs`. RunStore::insertLog adds
-- each line to the index with its own statement: an AFTER INSERT trigger would open a statement
-- savepoint per line, and FTS5 writes its pending index to disk at every savepoint, which makes
-- inserting three times slower. Deleting and updating lines keeps the index in step by trigger.
-- columnsize=0: no table of document lengths to update per line; they serve only bm25 ranking,
-- and matches are listed in line order.
CREATE VIRTUAL TABLE logs_fts USING fts5(message, content='logs', content_rowid='id', columnsize=0);
-- Merge segments 8 at a time rather than 4: fewer merges while lines stream in (about 7 % less
-- CPU per line where measured), and searches over a million lines still take milliseconds.
INSERT INTO logs_fts(logs_fts, rank) VALUES ('automerge', 8);
CREATE TRIGGER logs_fts_delete AFTER DELETE ON logs BEGIN
    INSERT INTO logs_fts(logs_fts, rowid, message) VALUES ('delete', old.id, old.message);
END;
CREATE TRIGGER logs_fts_update AFTER UPDATE OF message ON logs BEGIN
    INSERT INTO logs_fts(logs_fts, rowid, message) VALUES ('delete', old.id, old.message);
    INSERT INTO logs_fts(rowid, message) VALUES (new.id, new.message);
END;
)sql";

std::string errorText(sqlite3* db) { return sqlite3_errmsg(db); }

int readUserVersion(sqlite3* db, const std::string& path) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, nullptr) != SQLITE_OK) {
        throw StoreError("store " + path + ": cannot read the schema version: " + errorText(db));
    }
    int version = 0;
    const int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) version = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW) {
        throw StoreError("store " + path + ": cannot read the schema version: " + errorText(db));
    }
    return version;
}

void exec(sqlite3* db, const std::string& sql, const std::string& path, const std::string& what) {
    char* err = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
        std::string msg = err ? err : errorText(db);
        sqlite3_free(err);
        throw StoreError("store " + path + ": " + what + ": " + msg);
    }
}

} // namespace

const std::vector<SchemaMigration>& storeMigrations() {
    static const std::vector<SchemaMigration> steps = {
        {1, "create the tables of runs, metrics, device samples, spans, comms, checkpoints and logs",
         kSchema1},
        // Steps written by schema 1 stay in `metrics` and are still read from there.
        {2, "store step metrics in chunks of consecutive steps",
         "CREATE TABLE metric_chunks ("
         "  run INTEGER NOT NULL, first_step INTEGER NOT NULL, last_step INTEGER NOT NULL,"
         "  steps INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (run, first_step)) WITHOUT ROWID;"
         "CREATE INDEX metric_chunks_by_last ON metric_chunks (run, last_step);"},
        // Spans written by schema 2 or earlier stay in `spans` and are still read from there.
        {3, "store pipeline spans in chunks per step and rank",
         "CREATE TABLE span_chunks ("
         "  run INTEGER NOT NULL, step INTEGER NOT NULL, rank INTEGER NOT NULL, first_start REAL NOT NULL,"
         "  spans INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (run, step, rank, first_start)) WITHOUT ROWID;"},
        // The full-text index of log lines moves to a file of its own beside the store (see
        // LogIndex.h), so that indexing never holds the store's write lock. The lines stay in
        // `logs`; a search indexes a run's lines again when it first needs them.
        {4, "move the full-text index of log lines to its own file",
         "DROP TRIGGER IF EXISTS logs_fts_delete;"
         "DROP TRIGGER IF EXISTS logs_fts_update;"
         "DROP TABLE IF EXISTS logs_fts;"},
        // A store's identity, so that a run folder can say which store it belongs to (two stores
        // in one folder, or a store deleted and made again, both count runs from 1). And per run
        // how far into its output.log the rows are in the store: lines after that offset are
        // imported from the file when the supervisor could not write them (NULL for runs of
        // earlier versions, whose offset is unknown).
        {5, "give the store an identity and record how much of each run's output.log is stored",
         "CREATE TABLE store_info (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;"
         "INSERT INTO store_info (key, value) VALUES ('id', lower(hex(randomblob(16))));"
         "ALTER TABLE runs ADD COLUMN output_offset INTEGER;"},
        // Runs on hosts: how each host answers its supervisor, and hosts still to be cleaned of
        // a run's processes because they could not be reached when it ended.
        {6, "record the liveness of a run's hosts and the cleanups still due on them",
         "CREATE TABLE host_status (run INTEGER NOT NULL, host TEXT NOT NULL, state TEXT NOT NULL,"
         "  last_answer REAL, latency_ms REAL, detail TEXT NOT NULL DEFAULT '', t REAL NOT NULL,"
         "  PRIMARY KEY (run, host)) WITHOUT ROWID;"
         "CREATE TABLE pending_cleanups (run INTEGER NOT NULL, host TEXT NOT NULL, run_dir TEXT NOT NULL,"
         "  since REAL NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT NOT NULL DEFAULT '',"
         "  PRIMARY KEY (run, host)) WITHOUT ROWID;"},
        // Each rank's compute and wait time per step (stragglers), and what the supervisor found
        // wrong while a run goes (a hang, a straggler), the newest per kind.
        {7, "record each rank's compute and wait time per step, and a run's alerts",
         "CREATE TABLE rank_steps (run INTEGER NOT NULL, step INTEGER NOT NULL, rank INTEGER NOT NULL,"
         "  compute_ms REAL, wait_ms REAL, t REAL, PRIMARY KEY (run, step, rank)) WITHOUT ROWID;"
         "CREATE TABLE alerts (run INTEGER NOT NULL, kind TEXT NOT NULL, message TEXT NOT NULL,"
         "  since REAL NOT NULL, t REAL NOT NULL, active INTEGER NOT NULL, PRIMARY KEY (run, kind)) WITHOUT ROWID;"},
        // The Slurm job of a run on Slurm: its id (a batch job outlives its supervisor, and the
        // next one follows it by this id), its state, reason, nodes, place in the queue, time left.
        {8, "record the Slurm job of each run on Slurm",
         "CREATE TABLE slurm_jobs (run INTEGER PRIMARY KEY, job_id TEXT NOT NULL, mode TEXT NOT NULL,"
         "  state TEXT NOT NULL DEFAULT '', reason TEXT NOT NULL DEFAULT '', nodes TEXT NOT NULL DEFAULT '',"
         "  queue_position INTEGER NOT NULL DEFAULT 0, time_left_s INTEGER NOT NULL DEFAULT -1, t REAL NOT NULL);"},
        // An alert's ranks (for the device grid and the tooltips, not parsed from its message) and
        // the step it was found at (how many steps after the onset a straggler was named).
        {9, "record the ranks an alert names and the step it was found at",
         "ALTER TABLE alerts ADD COLUMN ranks TEXT NOT NULL DEFAULT '';"
         "ALTER TABLE alerts ADD COLUMN step INTEGER;"},
        // Device samples, comms and checkpoints are kept in tables generated from their events'
        // fields (EventTables.h), from which a field an event gains gets a column of its own. The
        // samples' and comms' tables of schema 1 have that shape already (comms gain the columns of
        // the fields they did not keep when the store is opened); checkpoints become one row per
        // (run, step, path), as the generated table of CheckpointEvent is keyed: a checkpoint
        // recorded twice keeps its later row.
        {10, "key checkpoints by run, step and path, as the tables generated from events are",
         "CREATE TABLE checkpoints_by_key (run INTEGER NOT NULL, \"step\" INTEGER, \"path\" TEXT, \"bytes\" INTEGER,"
         "  \"ms\" REAL, \"layout\" TEXT, \"t\" REAL, PRIMARY KEY (run, \"step\", \"path\")) WITHOUT ROWID;"
         "INSERT OR REPLACE INTO checkpoints_by_key (run, step, path, bytes, ms, layout, t)"
         "  SELECT run, step, path, bytes, ms, layout, t FROM checkpoints ORDER BY id;"
         "DROP TABLE checkpoints;"
         "ALTER TABLE checkpoints_by_key RENAME TO checkpoints;"},
        // A long run's older telemetry is thinned in the store (TelemetryThinning.h): how far each
        // run's rows of each event have been, so that a pass goes on where the last one ended.
        {11, "record how far each run's older telemetry has been thinned",
         "CREATE TABLE telemetry_thinned (run INTEGER NOT NULL, event TEXT NOT NULL, until REAL NOT NULL,"
         "  PRIMARY KEY (run, event)) WITHOUT ROWID;"},
    };
    return steps;
}

void applyMigrations(sqlite3* db, const std::string& path, const std::vector<SchemaMigration>& steps) {
    for (const SchemaMigration& step : steps) {
        if (readUserVersion(db, path) >= step.version) continue;
        exec(db, "BEGIN IMMEDIATE", path, "cannot lock the store to upgrade its schema");
        try {
            // Another process may have applied this step while we waited for the lock.
            if (readUserVersion(db, path) < step.version) {
                exec(db, step.sql, path,
                     "schema migration to version " + std::to_string(step.version) + " (" +
                         step.description + ") failed");
                exec(db,
                     "PRAGMA application_id = " + std::to_string(kStoreApplicationId) +
                         "; PRAGMA user_version = " + std::to_string(step.version),
                     path, "cannot record schema version " + std::to_string(step.version));
            }
            exec(db, "COMMIT", path,
                 "cannot commit schema migration to version " + std::to_string(step.version));
        } catch (...) {
            sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
            throw;
        }
    }
}

} // namespace parallax

#pragma once

#include "core/spec/Choice.h"
#include "core/store/AlertKind.h"
#include "core/store/HostState.h"
#include "core/store/LogLevel.h"
#include "core/store/RunState.h"
#include "core/telemetry/Events.h"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace parallax {

// Any failure to open, migrate, read or write the store. what() names the file and the fix.
class StoreError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The store's file is damaged (SQLite says CORRUPT or NOTADB) or the disk under it fails (IOERR):
// unlike a lock or a full disk, waiting does not help, so whoever writes gives up at once.
// what() names the file and says how to recover (damagedStoreHint).
class StoreDamaged : public StoreError {
public:
    using StoreError::StoreError;
};

// How to go on from a damaged store at `path`: keep it aside, and bring the runs back into a new
// store from their folders (parallax-cli import), since every run folder keeps the run's spec and
// its whole output.
std::string damagedStoreHint(const std::string& path);


struct NewRun {
    std::string name;
    std::string spec_toml;
    std::string model_kind;
    std::string layout;        // "dp2 tp1 pp1 zero0"
    int64_t steps_total = 0;
    int world_size = 1;
    std::optional<int64_t> parent_run; // resume of
    std::vector<std::string> tags;
};

struct RunRecord {
    int64_t id = 0;
    std::string name;
    std::string spec_toml;
    RunState state = RunState::Queued;
    double created_at = 0;
    double started_at = 0;     // 0 = not started
    double ended_at = 0;       // 0 = not ended
    std::vector<std::string> hosts;
    int world_size = 0;
    std::optional<int> exit_code;
    std::string exit_reason;
    int64_t supervisor_pid = 0;
    std::string supervisor_host;
    std::optional<int64_t> parent_run;
    std::vector<std::string> tags;
    std::string notes;
    std::string run_dir;
    std::string launch_command; // the copyable command line that was run
    // Summary kept current by the supervisor so that listing many runs needs no aggregation.
    std::string model_kind;
    std::string layout;
    int64_t params = 0;
    int64_t steps_total = 0;
    int64_t last_step = -1;
    std::optional<double> last_loss;
    std::optional<double> tokens_per_s;
    std::optional<double> mfu;
};

// How a host of a run on hosts answers its supervisor (the supervisor's ssh probes).
struct HostStatus {
    std::string host;
    HostState state = HostState::Answering;
    double last_answer = 0;   // seconds since the epoch; 0: never
    double latency_ms = -1;   // of the last probe that answered
    std::string detail;       // e.g. "silent for 12 s" or ssh's complaint
    double t = 0;             // when this was recorded
};

// What the supervisor found wrong while a run goes: the newest of each kind (hang, straggler),
// active while it lasts.
struct RunAlert {
    AlertKind kind = AlertKind::Hang;
    std::string message;
    double since = 0;   // when it was first raised
    double t = 0;       // when it was last said
    bool active = true;
    std::vector<int> ranks; // the ranks it names as the cause (a stage's ranks for a stage)
    int64_t step = -1;      // the newest step it was first found from, kept as since is (-1: unknown)
};

// The Slurm job a run's ranks run in (launch.target = "slurm"), and what Slurm last said of it.
struct SlurmJob {
    std::string job_id;
    SlurmMode mode = SlurmMode::Srun; // srun: the supervisor attached; batch: sbatch, followed, re-attachable
    std::string state;           // Slurm's job state: PENDING, RUNNING, COMPLETED, TIMEOUT, ...
    std::string reason;          // Slurm's reason (Priority, Resources, NonZeroExitCode, ...); empty: none
    std::string nodes;           // the job's node list once it runs
    int64_t queue_position = 0;  // PENDING: its place among the pending jobs of its partition (1 = next)
    int64_t time_left_s = -1;    // RUNNING: seconds to its time limit; -1: unknown or no limit
    double t = 0;                // when this was recorded
};

// A host where processes of a run may still run because it could not be reached when the run
// ended: ended as soon as it answers again (parallax-cli cleanup).
struct PendingCleanup {
    int64_t run = 0;
    std::string host;
    std::string run_dir;
    double since = 0;
    int64_t attempts = 0;
    std::string last_error;
};

struct RunFilter {
    std::string text;                 // substring of name, model, layout, tags or notes
    std::vector<RunState> states;     // empty: all
    std::string order_by = "id";      // id | name | state | created_at | last_loss | tokens_per_s | duration
                                      // (also started_at | ended_at | mfu | last_step | world_size);
                                      // runs without a value come last either way
    bool descending = true;
    int64_t limit = -1;
};

struct LogRow {
    int64_t id = 0;
    double t = 0;
    int rank = -1;
    std::string host;
    LogLevel::Value level = LogLevel::Info;
    std::string stream;  // stdout | stderr | telemetry | supervisor
    std::string message;
};

struct LogQuery {
    std::vector<int> ranks;        // empty: all ranks
    std::string min_level;         // empty: all; else debug < info < warn < error
    std::string match;             // FTS5 query over messages; empty: no text filter
                                   // plain words match as written (all of them; `word*` a prefix);
                                   // quotes, parentheses or AND/OR/NOT: FTS5 syntax (FtsQuery.h)
    int64_t after_id = 0;          // only rows with id > after_id (follow mode)
    int64_t limit = -1;
    int64_t offset = 0;
    bool descending = false;
};

} // namespace parallax

#pragma once

#include "core/launch/CheckedSpec.h"
#include "core/launch/LaunchPlan.h"
#include "core/store/StoreTypes.h"
#include "core/telemetry/Events.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace parallax {

struct SupervisorProgress {
    int64_t run_id = 0;
    int64_t steps_total = 0;
    std::optional<StepEvent> last_step;
    double started_at = 0;  // seconds since the epoch
    bool stopping = false;  // a stop was requested
};

struct SupervisorOptions {
    // Either a new run: its spec as a value (read and validated once, checkSpecFile), or a spec
    // file read here...
    std::optional<CheckedSpec> spec;
    std::string spec_path;
    // ...or a resume of this run: its spec, a new run with parent_run set, and the worker started
    // with --resume <its run dir>/checkpoints.
    std::optional<int64_t> resume_run;
    // With resume_run: the spec it continues with (another layout, hosts, devices; the same model),
    // a file, and/or "field=value" changes on top (applySpecOverrides). Empty: the run's own spec.
    std::string resume_spec_path;
    std::vector<std::string> resume_sets;

    // ...or neither: this run's Slurm batch job (launch.slurm_mode = "batch"), whose supervisor is
    // gone, followed again to its end from where the store's rows end (parallax-cli attach).
    std::optional<int64_t> attach_run;

    // The worker, launcher, cores and root flag; the run's paths are bound once its folder exists.
    LaunchContext launch;
    std::string runs_root;                  // empty: <store file>.runs (RunFolders)
    std::string hostname;                   // empty: this host's name
    std::vector<std::string> tags;
    // Events measured for the run before its launch (a balance probe's unit times, for
    // parallel.stage_split = "profile"), written with its first rows.
    std::vector<TelemetryEvent> recorded_before;
    // Continuations already made in this lineage (launch.on_host_failure = "resume"): none is
    // planned once launch.max_restarts are used.
    int64_t restarts_done = 0;

    std::chrono::milliseconds stop_grace{std::chrono::seconds(120)}; // SIGUSR1 -> SIGTERM
    std::chrono::milliseconds slurm_poll{std::chrono::seconds(2)};    // a batch job's state, this often
    std::chrono::milliseconds term_grace{std::chrono::seconds(10)};  // SIGTERM -> SIGKILL
    bool handle_signals = true; // SIGINT, SIGTERM, SIGHUP request a stop while run() runs
    // Rows held in memory while the store refuses them (locked by others, full); beyond that the
    // ranks' lines are kept in output.log only and imported from it once the store takes rows.
    size_t spool_above = 200000;
    // What the run keeps on disk: the spec's [retention] unless set here (output segments and how
    // many are kept, how long raw telemetry is kept at full rate, the disk budget).
    std::optional<RetentionSpec> retention;
    // How often the run's disk use is measured against retention.disk_budget_gb.
    std::chrono::seconds disk_check_every{60};

    // A host could not be reached to end the run's processes there: the caller arranges for
    // RunStore::pendingCleanups to be retried (parallax-cli starts `cleanup` in the background).
    std::function<void()> on_pending_cleanup;
    // The run exists (id, run dir), before the launcher starts.
    std::function<void(const RunRecord&)> on_created;
    // A newer step, at most every progress_interval.
    std::function<void(const SupervisorProgress&)> on_progress;
    std::chrono::milliseconds progress_interval{250};
    // The supervisor's own notices, as written to the run's log (stream "supervisor").
    std::function<void(LogLevel::Value level, const std::string& message)> on_notice;
    // Warnings and errors a rank reports through telemetry, e.g. a damaged checkpoint it skipped
    // when resuming ("rank 0: ..."); they are in the run's log as well.
    std::function<void(LogLevel::Value level, const std::string& message)> on_rank_warning;
};

} // namespace parallax

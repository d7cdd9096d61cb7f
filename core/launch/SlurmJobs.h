#pragma once

#include "core/store/StoreTypes.h"

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace parallax {

// One line of `scontrol show ... --oneliner`: its Key=Value settings (a value ends at the next blank).
std::map<std::string, std::string> parseSlurmSettings(const std::string& line);

// A Slurm duration as scontrol prints it or --time takes it (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM,
// D-HH:MM:SS) in seconds; nullopt for UNLIMITED, Partition_Limit and anything else.
std::optional<int64_t> parseSlurmDuration(const std::string& text);

// What a Slurm job state means for the run in it: one row per state Slurm ends a job in.
struct SlurmEndState {
    const char* state;     // Slurm's name (COMPLETED, TIMEOUT, ...)
    std::optional<RunState> run_state; // what the run becomes; none for COMPLETED: the ranks' run_end decides
    const char* says;      // what it means, for the run's reason
};
const std::vector<SlurmEndState>& slurmEndStates();
// The row of `state` (its leading word: "CANCELLED by 0" is CANCELLED), nullptr while the job is
// not over (PENDING, RUNNING, COMPLETING, SUSPENDED, REQUEUED, ...).
const SlurmEndState* slurmEndState(const std::string& state);

// What Slurm says of a job now.
struct SlurmJobStatus {
    bool known = false;      // false: Slurm knows no such job (any more); `error` says what it said
    SlurmJob job;            // job_id, state, reason, nodes, queue_position, time_left_s
    std::string exit_code;   // ExitCode=code:signal, once ended
    std::string partition;
    int64_t time_limit_s = -1;
    int64_t run_time_s = -1;
    std::string error;       // the command's complaint when it did not answer
};

// scontrol show job ID --oneliner, and for a pending job its place among the pending jobs of its
// partition (squeue, highest priority first). Never throws; a Slurm that does not answer within
// `timeout` gives known = false and `error`.
SlurmJobStatus querySlurmJob(const std::string& jobId, std::chrono::milliseconds timeout = std::chrono::seconds(10));

// Submits `script` with `submit` (sbatch --parsable ... script) in the environment `env` adds to
// this process's; returns the job id. Throws std::runtime_error with sbatch's words when Slurm
// refuses the job.
std::string submitSlurmJob(const std::vector<std::string>& submit, const std::map<std::string, std::string>& env);

// A partition as sinfo sees it now: for the console's list of where a run can go.
struct SlurmPartition {
    std::string name;
    bool is_default = false;
    std::string availability; // up, down, drain, inactive
    int64_t nodes_allocated = 0, nodes_idle = 0, nodes_other = 0, nodes_total = 0;
    int64_t cpus_allocated = 0, cpus_idle = 0, cpus_other = 0, cpus_total = 0;
    std::string time_limit;   // as sinfo prints it: "infinite", "1-00:00:00", ...
};
struct SlurmPartitions {
    std::vector<SlurmPartition> partitions;
    std::string error; // why there are none: no Slurm commands here, slurmctld does not answer
};
// sinfo --noheader --format="%P|%a|%F|%C|%l" parsed, one line per partition ("%P" marks the
// default with '*'); lines it cannot read are left out.
std::vector<SlurmPartition> parseSlurmPartitions(const std::string& sinfoOutput);
SlurmPartitions querySlurmPartitions(std::chrono::milliseconds timeout = std::chrono::seconds(10));

// scancel --signal=NAME ID (the job's steps, so the ranks), or without `signal` the whole job.
// Returns the complaint when scancel failed, else empty.
std::string signalSlurmJob(const std::string& jobId, const std::string& signal);
std::string cancelSlurmJob(const std::string& jobId);

} // namespace parallax

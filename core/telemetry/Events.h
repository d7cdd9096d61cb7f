#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace parallax {

// Telemetry events, worker -> supervisor. One JSON object per line after kTelemetryPrefix
// (TelemetryCodec.h). Times are seconds since the Unix epoch as doubles; span times are in rank 0's
// clock (the worker aligns clocks at start). Field names in JSON are the member names below.
inline constexpr int kTelemetryVersion = 1;

struct RunStartEvent {
    int world = 1;
    int dp = 1, tp = 1, pp = 1, zero = 0;
    std::string schedule;
    int64_t params = 0;
    double flops_per_token = 0; // training FLOPs (fwd + bwd) per token
    double peak_flops = 0;      // dense peak per device used for MFU
    std::string device;         // "cpu" | "cuda"
    std::vector<std::string> hosts;        // per rank
    std::vector<std::string> devices;      // per rank, e.g. "cpu" or "NVIDIA H200 #0"
    std::vector<double> clock_offsets;     // per rank: rank clock - rank 0 clock, seconds
    std::vector<int64_t> pids;             // per rank: its process id on its host
    std::string slurm_job;                 // under Slurm: the job id (SLURM_JOB_ID), else empty
    std::string slurm_nodes;               // and its nodes (SLURM_JOB_NODELIST)
    int64_t start_step = 0;                // > 0 when resumed
    double t = 0;
};

// Steps count from 0: once the step event of step s has arrived, s + 1 steps are done. Every
// "N/total" a person reads (the CLI's list and progress, the console's runs) says steps done.
inline int64_t stepsDoneAfter(int64_t step) { return step + 1; }

struct StepEvent {
    int64_t step = 0;        // from 0
    double loss = 0;
    double lr = 0;
    double grad_norm = 0;
    double tokens_per_s = 0;
    double samples_per_s = 0;
    double step_ms = 0;      // rank 0's wall time of the step
    double step_ms_min = 0;  // over ranks
    double step_ms_max = 0;
    int slowest_rank = 0;
    double mfu = 0;          // fraction, 0..1
    int64_t tokens = 0;      // cumulative tokens seen (once per data-parallel replica)
    double peak_mem = 0;     // bytes, max over ranks (GPU) or RSS (CPU)
    double t = 0;
};

struct DeviceEvent {
    int rank = 0;
    std::string host;
    int device = -1;         // GPU index, -1 for a CPU run
    double util = -1;        // % (GPU utilization), -1 unknown
    double mem_used = -1;    // bytes
    double mem_total = -1;   // bytes
    double power_w = -1;
    double temp_c = -1;
    double sm_clock_mhz = -1;
    double cpu_pct = -1;     // process CPU %, 100 = one core
    double rss = -1;         // bytes
    double t = 0;
};

struct SpanEvent {
    int rank = 0;
    int stage = 0;
    int64_t step = 0;
    int microbatch = 0;
    std::string kind;        // F | B | W | send | recv | optimizer | allreduce | allgather | ...
    double start = 0;        // rank 0 clock
    double end = 0;
};

// A rank's flight recorder, from a thread of its own every few seconds, also while the rank is
// blocked inside an operation: a heartbeat that says "waiting in X" apart from "silent".
struct CommEvent {
    int rank = 0;
    int64_t collectives = 0; // operations issued, every group
    int64_t bytes = 0;
    int64_t last_seq = 0;    // last completed collective sequence number
    std::vector<std::string> groups; // per process group (world, dp, tp, pp, mp):
    std::vector<int64_t> enqueued;   //   the last sequence number enqueued
    std::vector<int64_t> completed;  //   the highest sequence number known complete
    std::string pending_op;          // the oldest operation not known complete; empty: none
    std::string pending_group;
    int64_t pending_seq = 0;
    int64_t pending_bytes = 0;
    double pending_s = 0;            // how long it has been pending
    double t = 0;
};

// One rank's step: the time it computed and the time it spent blocked in collectives (the
// all-reduce evens wall time out between ranks: waiting is what tells a straggler from the rest).
struct RankStepEvent {
    int rank = 0;
    int64_t step = 0;
    double compute_ms = 0;
    double wait_ms = 0;
    double t = 0;
};

struct CheckpointEvent {
    int64_t step = 0;
    std::string path;
    int64_t bytes = 0;
    double ms = 0;
    std::string layout;      // layoutLabel: "dp2 tp1 pp1 zero0"
    double t = 0;
};

struct LogEvent {
    int rank = -1;           // -1: the supervisor or the launcher
    std::string level = "info"; // debug | info | warn | error
    std::string message;
    double t = 0;
};

struct RunEndEvent {
    std::string status;      // succeeded | failed | stopped
    std::string reason;
    int64_t step = 0;
    double t = 0;
};

using TelemetryEvent = std::variant<RunStartEvent, StepEvent, DeviceEvent, SpanEvent, CommEvent,
                                    CheckpointEvent, LogEvent, RunEndEvent, RankStepEvent>;

} // namespace parallax

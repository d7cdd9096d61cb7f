#pragma once

#include "core/telemetry/EventFields.h"

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace parallax {

// Telemetry events, worker -> supervisor. One JSON object per line after kTelemetryPrefix
// (TelemetryCodec.h). Times are seconds since the Unix epoch as doubles; span times are in rank 0's
// clock (the worker aligns clocks at start). Each event names itself (kName, the line's "ev") and
// lists its members once (fields(): the JSON keys, in the order the encoder writes them). An event
// with `table()` is kept by the store in a table generated from its fields (EventFields.h). The
// others are kept from the same declarations in a shape of their own: steps and spans packed in
// chunks (core/store/MetricChunk.h, SpanChunk.h), run_start as JSON with its run, logs as lines
// with their full-text index; run_end becomes a log line.
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

    static constexpr std::string_view kName = "run_start";
    static const std::vector<EventField<RunStartEvent>>& fields() {
        using E = RunStartEvent;
        static const std::vector<EventField<E>> f = {
            eventField("world", &E::world, kRequired), eventField("dp", &E::dp), eventField("tp", &E::tp),
            eventField("pp", &E::pp), eventField("zero", &E::zero), eventField("schedule", &E::schedule),
            eventField("params", &E::params), eventField("flops_per_token", &E::flops_per_token),
            eventField("peak_flops", &E::peak_flops), eventField("device", &E::device),
            eventField("hosts", &E::hosts), eventField("devices", &E::devices),
            eventField("clock_offsets", &E::clock_offsets), eventField("pids", &E::pids),
            eventField("slurm_job", &E::slurm_job), eventField("slurm_nodes", &E::slurm_nodes),
            eventField("start_step", &E::start_step), eventField("t", &E::t)};
        return f;
    }
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

    static constexpr std::string_view kName = "step";
    static const std::vector<EventField<StepEvent>>& fields() {
        using E = StepEvent;
        static const std::vector<EventField<E>> f = {
            eventField("step", &E::step, kRequired), eventField("loss", &E::loss), eventField("lr", &E::lr),
            eventField("grad_norm", &E::grad_norm), eventField("tokens_per_s", &E::tokens_per_s),
            eventField("samples_per_s", &E::samples_per_s), eventField("step_ms", &E::step_ms),
            eventField("step_ms_min", &E::step_ms_min), eventField("step_ms_max", &E::step_ms_max),
            eventField("slowest_rank", &E::slowest_rank), eventField("mfu", &E::mfu),
            eventField("tokens", &E::tokens), eventField("peak_mem", &E::peak_mem), eventField("t", &E::t)};
        return f;
    }
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
    // The samples this row stands for: 1 as a rank sends it; more in a row the store's thinning
    // made of a window of older ones (core/store/TelemetryThinning.h: their means, and the largest
    // memory, temperature and resident size).
    int samples = 1;

    static constexpr std::string_view kName = "device";
    static const std::vector<EventField<DeviceEvent>>& fields() {
        using E = DeviceEvent;
        static const std::vector<EventField<E>> f = {
            eventField("rank", &E::rank, kRequired), eventField("host", &E::host), eventField("device", &E::device),
            eventField("util", &E::util), eventField("mem_used", &E::mem_used),
            eventField("mem_total", &E::mem_total), eventField("power_w", &E::power_w),
            eventField("temp_c", &E::temp_c), eventField("sm_clock_mhz", &E::sm_clock_mhz),
            eventField("cpu_pct", &E::cpu_pct), eventField("rss", &E::rss), eventField("t", &E::t),
            storedField("samples", &E::samples)};
        return f;
    }
    static EventTable table() { return {"device_samples", {"t", "rank", "device"}}; }
};

struct SpanEvent {
    int rank = 0;
    int stage = 0;
    int64_t step = 0;
    int microbatch = 0;
    std::string kind;        // F | B | W | send | recv | optimizer | allreduce | allgather | ...
    double start = 0;        // rank 0 clock
    double end = 0;

    static constexpr std::string_view kName = "span";
    static const std::vector<EventField<SpanEvent>>& fields() {
        using E = SpanEvent;
        static const std::vector<EventField<E>> f = {
            eventField("rank", &E::rank, kRequired), eventField("stage", &E::stage),
            eventField("step", &E::step, kRequired), eventField("microbatch", &E::microbatch),
            eventField("kind", &E::kind, kRequired), eventField("start", &E::start, kRequired),
            eventField("end", &E::end, kRequired)};
        return f;
    }
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

    static constexpr std::string_view kName = "comm";
    static const std::vector<EventField<CommEvent>>& fields() {
        using E = CommEvent;
        static const std::vector<EventField<E>> f = {
            eventField("rank", &E::rank, kRequired), eventField("collectives", &E::collectives),
            eventField("bytes", &E::bytes), eventField("last_seq", &E::last_seq), eventField("groups", &E::groups),
            eventField("enqueued", &E::enqueued), eventField("completed", &E::completed),
            eventField("pending_op", &E::pending_op), eventField("pending_group", &E::pending_group),
            eventField("pending_seq", &E::pending_seq), eventField("pending_bytes", &E::pending_bytes),
            eventField("pending_s", &E::pending_s), eventField("t", &E::t)};
        return f;
    }
    static EventTable table() { return {"comms", {"t", "rank"}, /*listsAsJson=*/true}; }
};

// One rank's step: the time it computed and the time it spent blocked in collectives (the
// all-reduce evens wall time out between ranks: waiting is what tells a straggler from the rest).
struct RankStepEvent {
    int rank = 0;
    int64_t step = 0;
    double compute_ms = 0;
    double wait_ms = 0;
    double t = 0;

    static constexpr std::string_view kName = "rank_step";
    static const std::vector<EventField<RankStepEvent>>& fields() {
        using E = RankStepEvent;
        static const std::vector<EventField<E>> f = {
            eventField("rank", &E::rank, kRequired), eventField("step", &E::step, kRequired),
            eventField("compute_ms", &E::compute_ms), eventField("wait_ms", &E::wait_ms), eventField("t", &E::t)};
        return f;
    }
    static EventTable table() { return {"rank_steps", {"step", "rank"}}; }
};

// How long one unit of the model takes on this rank, forward and backward, each timed alone on one
// micro-batch's real input (the median of a few repetitions, after the run's steps): what
// parallel.stage_split = "profile" balances pipeline stages by. Sent when telemetry.unit_times is on.
struct UnitTimeEvent {
    int rank = 0;
    int stage = 0;           // pipeline stage of this rank
    int unit = 0;            // index in the model (trainer/models: embedding, blocks, head)
    std::string kind;        // the unit's kind: embed, block, vision_block, merge, head, ...
    double forward_ms = 0;
    double backward_ms = 0;
    double t = 0;

    static constexpr std::string_view kName = "unit_time";
    static const std::vector<EventField<UnitTimeEvent>>& fields() {
        using E = UnitTimeEvent;
        static const std::vector<EventField<E>> f = {
            eventField("rank", &E::rank, kRequired), eventField("stage", &E::stage),
            eventField("unit", &E::unit, kRequired), eventField("kind", &E::kind),
            eventField("forward_ms", &E::forward_ms), eventField("backward_ms", &E::backward_ms),
            eventField("t", &E::t)};
        return f;
    }
    static EventTable table() { return {"unit_times", {"unit", "rank"}}; }
};

// One collective timed on its own after the last step (telemetry.collective_times): the median of
// a few runs of `op` on `bytes` over `group` (its `ranks` processes), as rank 0 of the world saw it.
// The layout advisor's latency and bandwidth come from these.
struct CollectiveTimeEvent {
    int rank = 0;
    std::string group;       // world
    std::string op;          // all_reduce
    int ranks = 0;
    int64_t bytes = 0;
    double ms = 0;
    double t = 0;

    static constexpr std::string_view kName = "collective_time";
    static const std::vector<EventField<CollectiveTimeEvent>>& fields() {
        using E = CollectiveTimeEvent;
        static const std::vector<EventField<E>> f = {
            eventField("rank", &E::rank), eventField("group", &E::group, kRequired),
            eventField("op", &E::op, kRequired), eventField("ranks", &E::ranks, kRequired),
            eventField("bytes", &E::bytes, kRequired), eventField("ms", &E::ms, kRequired),
            eventField("t", &E::t)};
        return f;
    }
    static EventTable table() { return {"collective_times", {"bytes", "op", "group"}}; }
};

struct CheckpointEvent {
    int64_t step = 0;
    std::string path;
    int64_t bytes = 0;
    double ms = 0;
    std::string layout;      // layoutLabel: "dp2 tp1 pp1 zero0"
    double t = 0;

    static constexpr std::string_view kName = "checkpoint";
    static const std::vector<EventField<CheckpointEvent>>& fields() {
        using E = CheckpointEvent;
        static const std::vector<EventField<E>> f = {
            eventField("step", &E::step, kRequired), eventField("path", &E::path, kRequired),
            eventField("bytes", &E::bytes), eventField("ms", &E::ms), eventField("layout", &E::layout),
            eventField("t", &E::t)};
        return f;
    }
    static EventTable table() { return {"checkpoints", {"step", "path"}}; }
};

// One image a run drew ([samples], qwen_image): from the prompt of dataset sample `index` at its
// latents' size and seed train.seed + index, after `step` optimizer steps. The PNG travels base64 in
// the line and is kept so in the store: the run's samples are wherever its rows are.
struct SampleEvent {
    int64_t step = 0;
    int64_t index = 0;
    int64_t seed = 0;
    int64_t width = 0;
    int64_t height = 0;
    int64_t steps = 0;       // denoising steps
    std::string prompt;      // the prompt's text where the dataset holds it
    std::string png;         // base64 of the PNG file
    double ms = 0;           // time to draw and encode it
    double t = 0;

    static constexpr std::string_view kName = "sample";
    static const std::vector<EventField<SampleEvent>>& fields() {
        using E = SampleEvent;
        static const std::vector<EventField<E>> f = {
            eventField("step", &E::step, kRequired), eventField("index", &E::index, kRequired),
            eventField("seed", &E::seed), eventField("width", &E::width), eventField("height", &E::height),
            eventField("steps", &E::steps), eventField("prompt", &E::prompt), eventField("png", &E::png, kRequired),
            eventField("ms", &E::ms), eventField("t", &E::t)};
        return f;
    }
    static EventTable table() { return {"samples", {"step", "index"}}; }
};

struct LogEvent {
    int rank = -1;           // -1: the supervisor or the launcher
    std::string level = "info"; // debug | info | warn | error
    std::string message;
    double t = 0;

    static constexpr std::string_view kName = "log";
    static const std::vector<EventField<LogEvent>>& fields() {
        using E = LogEvent;
        static const std::vector<EventField<E>> f = {
            eventField("rank", &E::rank), eventField("level", &E::level),
            eventField("message", &E::message, kRequired), eventField("t", &E::t)};
        return f;
    }
};

struct RunEndEvent {
    std::string status;      // succeeded | failed | stopped
    std::string reason;
    int64_t step = 0;
    double t = 0;

    static constexpr std::string_view kName = "run_end";
    static const std::vector<EventField<RunEndEvent>>& fields() {
        using E = RunEndEvent;
        static const std::vector<EventField<E>> f = {
            eventField("status", &E::status, kRequired), eventField("reason", &E::reason),
            eventField("step", &E::step), eventField("t", &E::t)};
        return f;
    }
};

using TelemetryEvent = std::variant<RunStartEvent, StepEvent, DeviceEvent, SpanEvent, CommEvent,
                                    CheckpointEvent, LogEvent, RunEndEvent, RankStepEvent, UnitTimeEvent,
                                    CollectiveTimeEvent, SampleEvent>;

} // namespace parallax

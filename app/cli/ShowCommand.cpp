#include "app/cli/Commands.h"
#include "app/cli/Format.h"
#include "core/launch/CheckpointScan.h"
#include "core/launch/LineBuffer.h"
#include "core/launch/OutputDemux.h"
#include "core/launch/RawOutput.h"
#include "core/launch/SignalNames.h"
#include "core/launch/Utf8.h"
#include "core/spec/Estimates.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>

namespace parallax {

namespace {

void field(const std::string& name, const std::string& value) {
    if (value.empty())
        return;
    std::printf("  %-13s %s\n", name.c_str(), terminalSafe(value).c_str());
}

// The launcher's own report of the failure, read again from the raw output: the structured facts
// (rank, host, pid, signal or code) behind the one-line reason.
std::optional<LauncherFailure> failureFromOutput(const RunRecord& r) {
    const std::string path = rawOutputFile(r.run_dir);
    if (path.empty())
        return std::nullopt;
    std::optional<RawOutputReader> in;
    try {
        in.emplace(path);
    } catch (const std::runtime_error&) {
        return std::nullopt;
    }
    const bool slurm = r.launch_command.find("srun ") != std::string::npos;
    OutputDemux demux(slurm ? LauncherFormat::Slurm : LauncherFormat::OpenMpi);
    auto ignore = [](const DemuxedLine&) {};
    LineBuffer lines;
    auto onLine = [&](std::string_view line) { demux.feed(OutputStream::Stdout, line, ignore); };
    char buf[1 << 16];
    size_t n;
    while ((n = in->read(buf, sizeof buf)) > 0)
        lines.append(buf, n, onLine);
    lines.finish(onLine);
    demux.finish(ignore);
    return demux.failure();
}

std::string hostsSummary(const std::vector<std::string>& hosts) {
    std::map<std::string, int> counts;
    std::vector<std::string> order;
    for (const std::string& h : hosts) {
        if (counts[h]++ == 0)
            order.push_back(h);
    }
    std::string out;
    for (const std::string& h : order) {
        if (!out.empty())
            out += ", ";
        out += h + (counts[h] > 1 ? " x" + std::to_string(counts[h]) : "");
    }
    return out;
}

// The launcher's report of which rank failed how: rank, host, pid, and signal or exit code.
void printFailedRank(const RunRecord& r) {
    const std::optional<LauncherFailure> f = failureFromOutput(r);
    if (!f)
        return;
    const std::string host = !f->host.empty() ? f->host
                             : (f->rank >= 0 && static_cast<size_t>(f->rank) < r.hosts.size())
                                 ? r.hosts[f->rank]
                                 : std::string();
    std::string what = "rank " + std::to_string(f->rank);
    if (!host.empty())
        what += " on " + host;
    if (f->pid > 0)
        what += ", pid " + std::to_string(f->pid);
    if (f->kind == LauncherFailure::Kind::Signal)
        what += ", signal " + std::to_string(f->signal) + " (" + signalName(f->signal) + ")";
    else if (f->exit_code)
        what += ", exit code " + std::to_string(*f->exit_code);
    field("failed rank", what);
}

void printState(const RunStore& store, const RunRecord& r) {
    field("state", runStateName(r.state));
    field("reason", r.exit_reason);
    // What the supervisor finds wrong while the run goes (a hang, a straggler), and hosts that do
    // not answer.
    for (const RunAlert& a : store.alerts(r.id))
        if (a.active) field(alertKindName(a.kind), a.message);
    for (const HostStatus& h : store.hostStatuses(r.id))
        if (h.state != HostState::Answering)
            field("host", h.host + " " + hostStateName(h.state) + (h.detail.empty() ? "" : ": " + h.detail));
    if (r.exit_code)
        field("exit code", std::to_string(*r.exit_code));
    if (r.state == RunState::Failed)
        printFailedRank(r);
}

void printSlurmJob(const RunStore& store, const RunRecord& r) {
    if (const std::optional<SlurmJob> job = store.slurmJob(r.id)) {
        std::string text = job->job_id + " (" + choiceName(job->mode) + "), " + job->state;
        if (!job->reason.empty())
            text += " (" + job->reason + ")";
        if (job->queue_position > 0)
            text += ", place " + std::to_string(job->queue_position) + " in the queue";
        if (!job->nodes.empty())
            text += " on " + job->nodes;
        if (job->time_left_s >= 0 && !isTerminal(r.state))
            text += ", " + formatDuration(static_cast<double>(job->time_left_s)) + " left";
        field("slurm job", text);
    } else if (const std::optional<RunStartEvent> start = store.runStart(r.id); start && !start->slurm_job.empty()) {
        field("slurm job", start->slurm_job + (start->slurm_nodes.empty() ? "" : " on " + start->slurm_nodes));
    }
}

void printTimes(const RunRecord& r) {
    field("created", formatDateTime(r.created_at));
    if (r.started_at > 0)
        field("started", formatDateTime(r.started_at));
    if (r.ended_at > 0) {
        field("ended", formatDateTime(r.ended_at));
        if (r.started_at > 0)
            field("duration", formatDuration(r.ended_at - r.started_at));
    }
    if (r.supervisor_pid > 0)
        field("supervisor", "pid " + std::to_string(r.supervisor_pid) + " on " + r.supervisor_host);
}

// A run resumed, or gone on after a lost host: its segments as one run.
void printLineage(const RunStore& store, const RunRecord& r) {
    if (r.parent_run)
        field("resumed from", "run " + std::to_string(*r.parent_run));
    const std::vector<int64_t> lineage = store.lineage(r.id);
    if (lineage.size() <= 1)
        return;
    std::string text;
    for (int64_t id : lineage) {
        const std::optional<RunRecord> seg = store.run(id);
        if (!seg) continue;
        const std::optional<RunStartEvent> start = store.runStart(id);
        const int64_t first = start ? start->start_step : 0;
        text += (text.empty() ? "" : " -> ") + std::string(id == r.id ? "*" : "") + "run " + std::to_string(id) +
                " (steps " + std::to_string(first) + "-" + (seg->last_step >= 0 ? std::to_string(seg->last_step) : "") +
                ", " + runStateName(seg->state) + ")";
    }
    field("lineage", text);
}

void printProgress(const RunStore& store, const RunRecord& r) {
    std::string progress = r.last_step >= 0 ? "step " + std::to_string(stepsDoneAfter(r.last_step)) + "/" + std::to_string(r.steps_total)
                                            : "no step yet (" + std::to_string(r.steps_total) + " planned)";
    if (r.last_loss)
        progress += ", loss " + formatLoss(*r.last_loss);
    if (r.tokens_per_s)
        progress += ", " + formatRate(*r.tokens_per_s) + " tok/s";
    if (r.mfu)
        progress += ", MFU " + formatPercent(*r.mfu);
    field("progress", progress);
    const std::vector<StepEvent> metrics = store.metrics(r.id);
    if (metrics.empty())
        return;
    double sumMs = 0;
    double peak = 0;
    for (const StepEvent& s : metrics) {
        sumMs += s.step_ms;
        peak = std::max(peak, s.peak_mem);
    }
    if (sumMs > 0)
        field("step time", "mean " + formatExact(std::round(sumMs / static_cast<double>(metrics.size()) * 10) / 10) +
                           " ms over " + std::to_string(metrics.size()) + " steps");
    if (peak > 0)
        field("peak memory", formatBytes(peak));
}

void printCheckpoints(const RunStore& store, const RunRecord& r) {
    const std::vector<CheckpointEvent> checkpoints = store.checkpoints(r.id);
    if (checkpoints.empty()) {
        field("checkpoints", "none");
        return;
    }
    std::printf("  checkpoints\n");
    for (const CheckpointEvent& c : checkpoints) {
        std::printf("    step %-8lld %s", static_cast<long long>(c.step), c.path.c_str());
        if (c.bytes > 0)
            std::printf("  %s", formatBytes(static_cast<double>(c.bytes)).c_str());
        if (c.ms > 0)
            std::printf("  %s", formatDuration(c.ms / 1000.0).c_str());
        std::printf("\n");
    }
}

} // namespace

int showCommand(const std::string& storePath, const std::string& run) {
    RunStore store(storePath);
    markLostRunsIfWritable(store);
    const RunRecord r = requireRun(store, run);
    if (r.state == RunState::Lost) {
        // Its ranks may have checkpointed after its supervisor was gone; resume takes those.
        try {
            recordCheckpointsOnDisk(store, r);
        } catch (const StoreError&) {
            // A read-only store: show what it holds.
        }
    }
    std::printf("run %lld  %s\n", static_cast<long long>(r.id), terminalSafe(r.name).c_str());
    printState(store, r);
    field("model", r.model_kind + (r.params > 0 ? " (" + formatCount(static_cast<double>(r.params)) + " params)" : ""));
    field("layout", r.layout);
    field("world size", std::to_string(r.world_size));
    field("hosts", hostsSummary(r.hosts));
    printSlurmJob(store, r);
    printTimes(r);
    printLineage(store, r);
    std::string tags;
    for (const std::string& t : r.tags)
        tags += (tags.empty() ? "" : ", ") + t;
    field("tags", tags);
    field("notes", r.notes);
    field("run dir", r.run_dir);
    field("launch", r.launch_command);
    printProgress(store, r);
    printCheckpoints(store, r);
    return 0;
}

} // namespace parallax

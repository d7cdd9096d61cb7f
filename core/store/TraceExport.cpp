#include "core/store/TraceExport.h"

#include "core/telemetry/PipelineBubbles.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace parallax {

namespace {

using nlohmann::json;

// Process ids of the trace: the run's own track first, then one per host in rank order.
constexpr int kRunPid = 1;
// Threads of the run process.
constexpr int kStepsTid = 1, kCheckpointsTid = 2, kSupervisorTid = 3;

struct Timed {
    double t = 0; // seconds, rank 0's clock
    json event;
};

class TraceBuilder {
public:
    TraceBuilder(const RunRecord& run, const std::vector<std::string>& rankHosts) : m_hosts(rankHosts) {
        meta(kRunPid, -1, "process_name", "run #" + std::to_string(run.id) + " " + run.name);
        meta(kRunPid, -1, "process_sort_index", 0);
        meta(kRunPid, kStepsTid, "thread_name", "steps");
        meta(kRunPid, kCheckpointsTid, "thread_name", "checkpoints");
        meta(kRunPid, kSupervisorTid, "thread_name", "supervisor and launcher");
        for (size_t r = 0; r < rankHosts.size(); ++r) {
            const int pid = hostPid(int(r)); // names the host's process the first time
            meta(pid, int(r), "thread_name", "rank " + std::to_string(r));
            meta(pid, int(r), "thread_sort_index", int(r));
        }
    }

    // The host process of a rank: hosts numbered in the order their first rank appears.
    int hostPid(int rank) {
        const std::string host = rank >= 0 && size_t(rank) < m_hosts.size() ? m_hosts[size_t(rank)] : "unknown host";
        const auto it = m_hostPids.find(host);
        if (it != m_hostPids.end()) return it->second;
        const int pid = kRunPid + 1 + int(m_hostPids.size());
        m_hostPids[host] = pid;
        meta(pid, -1, "process_name", host);
        meta(pid, -1, "process_sort_index", pid);
        return pid;
    }

    void complete(double start, double end, int pid, int tid, const std::string& name, const char* category,
                  json args) {
        json e = {{"name", name}, {"cat", category}, {"ph", "X"}, {"pid", pid}, {"tid", tid},
                  {"dur", std::max(0.0, end - start) * 1e6}, {"args", std::move(args)}};
        m_timed.push_back({start, std::move(e)});
    }

    void instant(double t, int pid, int tid, const std::string& name, const char* category, json args) {
        json e = {{"name", name}, {"cat", category}, {"ph", "i"}, {"s", "t"}, {"pid", pid}, {"tid", tid},
                  {"args", std::move(args)}};
        m_timed.push_back({t, std::move(e)});
    }

    void counter(double t, int pid, const std::string& name, json values) {
        json e = {{"name", name}, {"cat", "comm"}, {"ph", "C"}, {"pid", pid}, {"tid", 0}, {"args", std::move(values)}};
        m_timed.push_back({t, std::move(e)});
    }

    int64_t write(std::ostream& out) {
        std::stable_sort(m_timed.begin(), m_timed.end(), [](const Timed& a, const Timed& b) { return a.t < b.t; });
        const double origin = m_timed.empty() ? 0.0 : m_timed.front().t;
        out << "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"origin_epoch_s\":" << json(origin).dump()
            << ",\"clock\":\"rank 0\"},\"traceEvents\":[\n";
        bool first = true;
        auto put = [&](const json& e) {
            // Log lines may hold bytes that are not UTF-8 (a rank's raw output): replaced, not fatal.
            out << (first ? "" : ",\n") << e.dump(-1, ' ', false, json::error_handler_t::replace);
            first = false;
        };
        for (const json& m : m_meta) put(m);
        for (Timed& e : m_timed) {
            // Microseconds from the first event: whole-epoch microseconds lose sub-microsecond
            // digits in a double, and a viewer's ruler reads better from zero.
            e.event["ts"] = (e.t - origin) * 1e6;
            put(e.event);
        }
        out << "\n]}\n";
        if (!out) throw std::runtime_error("the trace could not be written (disk full, or the file closed)");
        return int64_t(m_meta.size() + m_timed.size());
    }

private:
    template <typename V>
    void meta(int pid, int tid, const char* name, const V& value) {
        json e = {{"name", name}, {"ph", "M"}, {"pid", pid}, {"ts", 0}};
        e["tid"] = tid < 0 ? 0 : tid;
        e["args"] = std::string(name).find("sort_index") != std::string::npos ? json{{"sort_index", value}}
                                                                                 : json{{"name", value}};
        m_meta.push_back(std::move(e));
    }

    std::vector<std::string> m_hosts;
    std::map<std::string, int> m_hostPids;
    std::vector<json> m_meta;
    std::vector<Timed> m_timed;
};

std::string spanName(const SpanEvent& s) {
    if (PipelineBubbles::isCompute(s.kind))
        return s.kind + std::to_string(s.microbatch); // "F3": the schedule's own notation
    return s.kind;
}

} // namespace

TraceCounts writeTrace(const RunStore& store, int64_t runId, std::ostream& out) {
    const std::optional<RunRecord> run = store.run(runId);
    if (!run) throw std::runtime_error("run " + std::to_string(runId) + " is not in the store");
    // Each rank's host as the ranks reported it at the start; the run's own list otherwise.
    const std::optional<RunStartEvent> start = store.runStart(runId);
    std::vector<std::string> hosts = start && !start->hosts.empty() ? start->hosts : run->hosts;
    if (int(hosts.size()) < run->world_size) hosts.resize(size_t(run->world_size), "unknown host");
    TraceBuilder trace(*run, hosts);
    TraceCounts counts;

    for (int64_t step : store.spanSteps(runId)) {
        for (const SpanEvent& s : store.spans(runId, step)) {
            trace.complete(s.start, s.end, trace.hostPid(s.rank), s.rank, spanName(s), "span",
                           {{"kind", s.kind}, {"stage", s.stage}, {"step", s.step}, {"microbatch", s.microbatch}});
            ++counts.spans;
        }
    }
    for (const StepEvent& s : store.metrics(runId)) {
        const double start = s.t - s.step_ms / 1e3;
        trace.complete(start, s.t, kRunPid, kStepsTid, "step " + std::to_string(s.step), "step",
                       {{"step", s.step}, {"loss", std::isfinite(s.loss) ? json(s.loss) : json(nullptr)},
                        {"step_ms", s.step_ms}, {"step_ms_max", s.step_ms_max}, {"slowest_rank", s.slowest_rank},
                        {"tokens_per_s", s.tokens_per_s}, {"mfu", s.mfu}});
        ++counts.steps;
    }
    for (const RankStepEvent& r : store.events<RankStepEvent>(runId)) {
        const double ms = r.compute_ms + r.wait_ms;
        trace.complete(r.t - ms / 1e3, r.t, trace.hostPid(r.rank), r.rank, "step " + std::to_string(r.step),
                       "rank_step", {{"step", r.step}, {"compute_ms", r.compute_ms}, {"wait_ms", r.wait_ms}});
        ++counts.rankSteps;
    }
    for (const CheckpointEvent& c : store.checkpoints(runId)) {
        trace.complete(c.t - c.ms / 1e3, c.t, kRunPid, kCheckpointsTid, "checkpoint at step " + std::to_string(c.step),
                       "checkpoint", {{"step", c.step}, {"path", c.path}, {"bytes", c.bytes}, {"layout", c.layout}});
        ++counts.checkpoints;
    }
    for (const CommEvent& c : store.comms(runId)) {
        const int pid = trace.hostPid(c.rank);
        trace.counter(c.t, pid, "rank " + std::to_string(c.rank) + " operations",
                      {{"collectives", c.collectives}, {"last_seq", c.last_seq}});
        if (!c.pending_op.empty())
            trace.instant(c.t, pid, c.rank, "waiting in " + c.pending_op + " (" + c.pending_group + ")", "comm",
                          {{"op", c.pending_op}, {"group", c.pending_group}, {"seq", c.pending_seq},
                           {"bytes", c.pending_bytes}, {"pending_s", c.pending_s}});
        ++counts.comms;
    }
    for (const LogRow& l : store.logs(runId)) {
        const bool ofRank = l.rank >= 0;
        trace.instant(l.t, ofRank ? trace.hostPid(l.rank) : kRunPid, ofRank ? l.rank : kSupervisorTid,
                      l.message.size() > 80 ? l.message.substr(0, 77) + "..." : l.message, "log",
                      {{"level", LogLevel::name(l.level)}, {"stream", l.stream}, {"message", l.message}});
        ++counts.logs;
    }
    counts.events = trace.write(out);
    return counts;
}

} // namespace parallax

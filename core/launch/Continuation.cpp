#include "core/launch/Continuation.h"

#include "core/spec/ClusterProfile.h"

#include <algorithm>

namespace parallax {

namespace {

std::string tomlStrings(const std::vector<std::string>& items) {
    std::string out = "[";
    for (const std::string& item : items) {
        out += out.size() > 1 ? ", \"" : "\"";
        for (char c : item) {
            if (c == '"' || c == '\\') out.push_back('\\');
            out.push_back(c);
        }
        out += "\"";
    }
    return out + "]";
}

} // namespace

ContinuationResult planContinuation(const RunSpec& spec, const std::vector<std::string>& answering,
                                    const std::vector<std::string>& lost) {
    ContinuationResult result;
    const LaunchSpec& l = spec.launch;
    if (static_cast<int64_t>(answering.size()) < l.min_hosts) {
        result.error = std::to_string(answering.size()) + " host(s) answer, fewer than launch.min_hosts = " +
                       std::to_string(l.min_hosts);
        return result;
    }
    int64_t slots = 0;
    std::vector<std::string> names;
    for (const std::string& entry : answering) {
        const std::optional<HostSlots> h = parseHostSlots(entry);
        slots += h ? h->slot_count : 0;
        names.push_back(h ? h->name : entry);
    }
    const ParallelSpec& p = spec.parallel;
    const TrainSpec& t = spec.train;
    const int64_t group = std::max<int64_t>(1, p.tp) * std::max<int64_t>(1, p.pp);
    int64_t dp = std::min<int64_t>(p.dp, slots / group);
    // Each data-parallel rank takes whole micro-batches: the global batch must split into them.
    while (dp > 0 && (t.micro_batch <= 0 || t.global_batch % (dp * t.micro_batch) != 0)) --dp;
    if (dp < 1) {
        result.error = "the " + std::to_string(slots) + " slot(s) of the hosts that answer (" +
                       [&] {
                           std::string s;
                           for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
                           return s;
                       }() +
                       ") hold no data-parallel replica of parallel.tp * pp = " + std::to_string(group) +
                       " processes whose micro-batches of train.micro_batch = " + std::to_string(t.micro_batch) +
                       " make up train.global_batch = " + std::to_string(t.global_batch);
        return result;
    }
    ContinuationPlan plan;
    plan.dp = dp;
    plan.hosts = answering;
    std::vector<std::string> excluded = l.exclude_hosts;
    for (const std::string& h : lost)
        if (std::find(excluded.begin(), excluded.end(), h) == excluded.end()) excluded.push_back(h);
    plan.sets.push_back("launch.exclude_hosts=" + tomlStrings(excluded));
    plan.sets.push_back("parallel.dp=" + std::to_string(dp));
    if (l.processes) plan.sets.push_back("launch.processes=" + std::to_string(dp * group));
    std::string on;
    for (const std::string& n : names) on += (on.empty() ? "" : ", ") + n;
    plan.said = "on " + on + " as dp=" + std::to_string(dp) + " (tp=" + std::to_string(p.tp) + ", pp=" +
                std::to_string(p.pp) + "; " + std::to_string(t.global_batch / (dp * t.micro_batch)) +
                " micro-batch(es) a step on each rank, the global batch of " + std::to_string(t.global_batch) +
                " kept)";
    result.plan = plan;
    return result;
}

} // namespace parallax

#include "core/launch/HangDetector.h"

#include "core/launch/RankList.h"
#include "core/spec/MeshCoord.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace parallax {

namespace {

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string bytesText(int64_t bytes) {
    std::ostringstream s;
    s.precision(3);
    if (bytes >= (int64_t(1) << 20)) s << static_cast<double>(bytes) / double(1 << 20) << " MiB";
    else if (bytes >= 1024) s << static_cast<double>(bytes) / 1024.0 << " KiB";
    else s << bytes << " B";
    return s.str();
}

// Hosts a message names one by one; past this many, it counts them.
constexpr size_t kHostsNamed = 3;

// "rank 0 waits", "ranks 0, 2 wait".
std::string ranksDo(const std::vector<int>& ranks, const std::string& verb) {
    return ranksText(ranks) + " " + verb + (ranks.size() == 1 ? "s" : "");
}

int64_t seqOf(const CommEvent& e, const std::string& group, bool enqueued) {
    for (size_t i = 0; i < e.groups.size(); ++i)
        if (e.groups[i] == group) {
            const std::vector<int64_t>& v = enqueued ? e.enqueued : e.completed;
            return i < v.size() ? v[i] : 0;
        }
    return -1; // the rank has no such group
}

} // namespace

void HangDetector::onStep(const StepEvent& e, Clock::time_point now) {
    m_lastStep = now;
    m_lastStepNumber = e.step;
    if (e.step_ms > 0) {
        m_stepMs.push_back(e.step_ms);
        if (m_stepMs.size() > 50) m_stepMs.pop_front();
    }
}

void HangDetector::onComm(const CommEvent& e, Clock::time_point now) {
    RankState& r = m_ranks[e.rank];
    r.last = e;
    r.arrived = now;
    r.seen = true;
}

void HangDetector::onRankStep(const RankStepEvent& e) {
    if (++m_rankSteps[e.rank] <= m_options.straggler_skip) return;
    auto& q = m_compute[e.rank];
    q.emplace_back(e.step, e.compute_ms);
    while (q.size() > m_options.straggler_window) q.pop_front();
}

std::string HangDetector::who(int rank) const {
    const std::string host = m_hostOf ? m_hostOf(rank) : std::string();
    return "rank " + std::to_string(rank) + (host.empty() ? std::string() : " on " + host);
}

std::vector<std::pair<std::string, std::vector<int>>> HangDetector::byHost(const std::vector<int>& ranks) const {
    std::vector<std::pair<std::string, std::vector<int>>> groups;
    std::map<std::string, size_t> at;
    for (int r : ranks) {
        const std::string host = m_hostOf ? m_hostOf(r) : std::string();
        const auto [it, added] = at.emplace(host, groups.size());
        if (added) groups.push_back({host, {}});
        groups[it->second].second.push_back(r);
    }
    return groups;
}

std::string HangDetector::whoAll(const std::vector<int>& ranks) const {
    const auto groups = byHost(ranks);
    auto on = [](const std::string& host) { return host.empty() ? std::string() : " on " + host; };
    std::string out;
    if (groups.size() <= kHostsNamed) {
        for (size_t i = 0; i < groups.size(); ++i)
            out += (i ? ", " : "") + ranksText(groups[i].second) + on(groups[i].first);
        return out;
    }
    std::string hosts;
    for (size_t i = 0; i < kHostsNamed; ++i) hosts += groups[i].first + ", ";
    return ranksText(ranks) + " on " + countText(groups.size()) + " hosts (" + hosts + "…)";
}

std::string HangDetector::since(Clock::time_point t, Clock::time_point now) const {
    return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now - t).count()) + " s";
}

HangDetector::Waited HangDetector::waitedIn(const std::vector<int>& waiting) const {
    // What the waiting ranks wait in: the operation most of them are inside.
    Waited w;
    std::map<std::pair<std::string, int64_t>, int> votes;
    for (int r : waiting) ++votes[{m_ranks.at(r).last.pending_group, m_ranks.at(r).last.pending_seq}];
    if (!votes.empty()) {
        const auto best = std::max_element(votes.begin(), votes.end(),
                                           [](const auto& a, const auto& b) { return a.second < b.second; });
        w.group = best->first.first;
        w.seq = best->first.second;
        for (int r : waiting) {
            const CommEvent& e = m_ranks.at(r).last;
            if (e.pending_group == w.group && e.pending_seq == w.seq) {
                w.op = e.pending_op;
                w.bytes = e.pending_bytes;
                w.pendingS = std::max(w.pendingS, e.pending_s);
            }
        }
    }
    for (int r : waiting)
        if (m_ranks.at(r).last.pending_group == w.group && m_ranks.at(r).last.pending_seq == w.seq)
            w.inside.push_back(r);
    w.operation = w.op.empty() ? std::string()
                               : w.op + " #" + std::to_string(w.seq) + " of the " + w.group + " group (" +
                                     bytesText(w.bytes) + ")";
    return w;
}

std::optional<HangDetector::Finding> HangDetector::hang(Clock::time_point now) const {
    if (!m_lastStep) return std::nullopt; // setup (loading, the first step's compilation) is no hang
    const double medianStep = median(std::vector<double>(m_stepMs.begin(), m_stepMs.end()));
    const auto threshold = std::max(m_options.hang_after,
                                    std::chrono::milliseconds(static_cast<int64_t>(5 * medianStep)));
    if (now - *m_lastStep < threshold) return std::nullopt;

    Finding f;
    f.step = m_lastStepNumber;
    const std::string noStep = "no step for " + since(*m_lastStep, now);
    // Ranks that have not sent a heartbeat for a while, or never did.
    std::vector<int> silent;
    std::vector<int> waiting;
    for (int r = 0; r < std::max<int>(m_world, static_cast<int>(m_ranks.size())); ++r) {
        const auto it = m_ranks.find(r);
        if (it == m_ranks.end() || now - it->second.arrived > m_options.silent_after) silent.push_back(r);
        else if (!it->second.last.pending_op.empty()) waiting.push_back(r);
    }
    const Waited w = waitedIn(waiting);
    if (!silent.empty()) {
        // A host at a time (a lost host silences all its ranks), the first few hosts named.
        const auto groups = byHost(silent);
        std::vector<int> rest;
        for (size_t g = 0; g < groups.size(); ++g) {
            const auto& [host, ranks] = groups[g];
            if (g >= kHostsNamed) {
                rest.insert(rest.end(), ranks.begin(), ranks.end());
                continue;
            }
            std::optional<Clock::time_point> heard; // the longest silence of the group
            for (int r : ranks)
                if (const auto it = m_ranks.find(r); it != m_ranks.end() && (!heard || it->second.arrived < *heard))
                    heard = it->second.arrived;
            const bool one = ranks.size() == 1;
            f.message += (g ? "; " : "") + ranksText(ranks) + (host.empty() ? "" : " on " + host) +
                         (one ? " is" : " are") + " silent (" +
                         (heard ? "no heartbeat for " + since(*heard, now) : std::string("no heartbeat ever")) +
                         ": stopped, or " + (one ? "its" : "their") + " host is gone)";
        }
        if (!rest.empty())
            f.message += "; and " + ranksText(rest) + " on " + countText(groups.size() - kHostsNamed) + " more hosts";
        f.ranks = silent;
        if (!w.inside.empty())
            f.message += "; " + ranksDo(w.inside, "wait") + " in " + w.operation + " for " +
                         std::to_string(static_cast<int>(w.pendingS)) + " s";
        f.message = noStep + ": " + f.message;
        return f;
    }
    if (!w.inside.empty()) {
        if (std::optional<Finding> behind = notEntered(w, noStep)) {
            behind->step = f.step;
            return behind;
        }
        if (static_cast<int>(w.inside.size()) == std::max<int>(m_world, static_cast<int>(m_ranks.size()))) {
            f.ranks = w.inside;
            f.message = noStep + ": every rank is inside " + w.operation + " for " +
                        std::to_string(static_cast<int>(w.pendingS)) +
                        " s; none lags, so the fault is in the network or the communication library";
            return f;
        }
    }
    std::vector<int> busy;
    for (const auto& [r, state] : m_ranks)
        if (state.last.pending_op.empty()) busy.push_back(r);
    f.ranks = busy;
    f.message = noStep + (busy.empty() ? std::string(": the ranks wait in different operations")
                                       : ": " + ranksText(busy) + " compute" + (busy.size() == 1 ? "s" : "") +
                                             ", in no operation" +
                                             (w.inside.empty() ? std::string()
                                                               : ", while " + ranksDo(w.inside, "wait") + " in " +
                                                                     w.operation));
    return f;
}

// The ranks that have not entered the operation the others wait in: their own count of the
// group's operations is behind.
std::optional<HangDetector::Finding> HangDetector::notEntered(const Waited& w, const std::string& noStep) const {
    std::vector<int> behind;
    std::string where;
    for (const auto& [r, state] : m_ranks) {
        if (std::find(w.inside.begin(), w.inside.end(), r) != w.inside.end()) continue;
        const int64_t theirs = seqOf(state.last, w.group, true);
        if (theirs < 0) continue; // not in such a group
        if (theirs < w.seq) {
            behind.push_back(r);
            if (behind.size() > kHostsNamed) continue; // the first few said, the rest counted
            where += (where.empty() ? "" : "; ") + who(r) +
                     (state.last.pending_op.empty()
                          ? std::string(" is computing, in no operation")
                          : " waits in " + state.last.pending_op + " #" + std::to_string(state.last.pending_seq) +
                                " of the " + state.last.pending_group + " group");
        }
    }
    if (behind.empty())
        return std::nullopt;
    if (behind.size() > kHostsNamed) where += "; …";
    Finding f;
    f.ranks = behind;
    f.message = noStep + ": " + ranksText(behind) + " " + (behind.size() == 1 ? "has" : "have") + " not entered " +
                w.operation + " that " + ranksText(w.inside) + (w.inside.size() == 1 ? " waits" : " wait") +
                " in for " + std::to_string(static_cast<int>(w.pendingS)) + " s (" + where + ")";
    return f;
}

std::optional<HangDetector::Finding> HangDetector::straggler() const {
    if (m_compute.size() < 2) return std::nullopt;
    std::map<int, double> medians;
    int64_t newest = -1; // the newest step every rank's window holds
    for (const auto& [rank, q] : m_compute) {
        if (q.size() < m_options.straggler_window) return std::nullopt;
        newest = newest < 0 ? q.back().first : std::min(newest, q.back().first);
        std::vector<double> v;
        for (const auto& [step, ms] : q) v.push_back(ms);
        medians[rank] = median(v);
    }
    const size_t window = m_compute.begin()->second.size();
    auto slowerThan = [&](double slow, double rest) {
        return rest > 0 && slow >= m_options.straggler_ratio * rest && slow - rest >= m_options.straggler_min_ms;
    };
    auto said = [&](const std::string& what, double slow, double rest, const std::string& others,
                    const std::string& waiting) {
        std::ostringstream s;
        s.precision(2);
        s << std::fixed << what << ": compute " << slow / rest << "x the median of " << others << " over the last "
          << window << " steps (" << static_cast<int>(slow) << " ms against " << static_cast<int>(rest) << " ms); "
          << waiting;
        return s.str();
    };
    // A rank against the other ranks of its stage: they run the same layers, so they should take
    // as long (a pipeline's stages differ by design).
    std::map<int, std::vector<int>> stages; // stage -> ranks
    for (const auto& [rank, m] : medians)
        stages[m_layoutKnown ? meshCoord(rank, m_dp, m_tp, m_pp).pp : 0].push_back(rank);
    std::optional<std::pair<int, double>> worst; // rank, ratio
    std::string message;
    for (const auto& [stage, ranks] : stages) {
        if (ranks.size() < 2) continue;
        const int slowest = *std::max_element(ranks.begin(), ranks.end(),
                                              [&](int a, int b) { return medians[a] < medians[b]; });
        std::vector<double> others;
        for (int r : ranks)
            if (r != slowest) others.push_back(medians[r]);
        const double rest = median(others);
        if (!slowerThan(medians[slowest], rest)) continue;
        if (worst && medians[slowest] / rest <= worst->second) continue;
        worst = {slowest, medians[slowest] / rest};
        message = said(who(slowest), medians[slowest], rest,
                       m_pp > 1 ? "the other ranks of pipeline stage " + std::to_string(stage) : std::string("the others"),
                       "the others wait for it in their collectives");
    }
    if (worst) return Finding{message, {worst->first}, newest};
    // A stage against the other stages.
    if (m_pp < 2 || stages.size() < 2) return std::nullopt;
    std::map<int, double> stageMs;
    for (const auto& [stage, ranks] : stages) {
        std::vector<double> v;
        for (int r : ranks) v.push_back(medians[r]);
        stageMs[stage] = median(v);
    }
    const auto slowest = std::max_element(stageMs.begin(), stageMs.end(),
                                          [](const auto& a, const auto& b) { return a.second < b.second; });
    std::vector<double> others;
    for (const auto& [stage, ms] : stageMs)
        if (stage != slowest->first) others.push_back(ms);
    const double rest = median(others);
    if (!slowerThan(slowest->second, rest)) return std::nullopt;
    const std::vector<int>& ranks = stages.at(slowest->first);
    const std::string what = "pipeline stage " + std::to_string(slowest->first) + " (" + whoAll(ranks) + ")";
    return Finding{said(what, slowest->second, rest, "the other stages",
                        "the stages next to it wait for its activations and gradients"),
                   ranks, newest};
}

} // namespace parallax

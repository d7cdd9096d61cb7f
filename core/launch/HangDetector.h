#pragma once

#include "core/telemetry/Events.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace parallax {

// Names what holds a run up, from the ranks' telemetry as the supervisor receives it:
//  - a hang: no step for max(hang_after, 5 x the median step). The ranks' flight recorders (their
//    `comm` heartbeats) tell which rank has not entered the operation the others wait in, a rank
//    that is silent (stopped, or its host gone: no heartbeat), or that every rank is inside the
//    same operation (a network or NCCL fault);
//  - a straggler: the rank whose compute time per step (rank_step) is well above that of the
//    other ranks of its pipeline stage over the last steps, which the others' time waiting in
//    collectives makes up for; or, with a pipeline, the stage whose ranks compute well longer
//    than the other stages' (its neighbours wait for its activations and gradients).
// Times are the supervisor's steady clock at arrival, so the hosts' clocks do not matter.
class HangDetector {
public:
    using Clock = std::chrono::steady_clock;

    struct Options {
        std::chrono::milliseconds hang_after{std::chrono::seconds(30)};
        std::chrono::milliseconds silent_after{std::chrono::seconds(10)}; // no heartbeat for this long
        size_t straggler_window = 10;   // steps
        size_t straggler_skip = 5;      // first steps left out (warm-up: allocation, caches)
        // Compute over the others' median: a rank at half speed computes twice as long; ranks
        // sharing cores with other work differ by a third or more without being stragglers.
        double straggler_ratio = 1.8;
        double straggler_min_ms = 5;    // and at least this much slower (noise on tiny steps)
    };

    explicit HangDetector(Options options) : m_options(options) {}

    // Host of a rank for the messages (empty: not said).
    void setHostOf(std::function<std::string(int rank)> hostOf) { m_hostOf = std::move(hostOf); }
    void setWorld(int world) { m_world = world; }
    // The layout, for comparing each rank with the ranks of its own pipeline stage (core/spec/MeshCoord).
    void setLayout(int dp, int tp, int pp) {
        m_dp = std::max(1, dp);
        m_tp = std::max(1, tp);
        m_pp = std::max(1, pp);
        m_layoutKnown = true;
    }

    void onStep(const StepEvent& e, Clock::time_point now);
    void onComm(const CommEvent& e, Clock::time_point now);
    void onRankStep(const RankStepEvent& e);

    struct Finding {
        std::string message;
        std::vector<int> ranks; // the ranks named as the cause
        int64_t step = -1;      // the newest step it was found from: the last completed one (a hang), the
                                // newest every rank's window holds (a straggler)
    };
    // The hang now, if any (checked on every call; cheap).
    std::optional<Finding> hang(Clock::time_point now) const;
    // The straggler of the last steps, if any.
    std::optional<Finding> straggler() const;

private:
    // The operation most of the waiting ranks are inside, and those inside it.
    struct Waited {
        std::string op, group, operation; // operation: "all_reduce #812 of the dp group (4 MiB)"
        int64_t seq = 0, bytes = 0;
        double pendingS = 0;
        std::vector<int> inside;
    };
    Waited waitedIn(const std::vector<int>& waiting) const;
    std::optional<Finding> notEntered(const Waited& waited, const std::string& noStep) const;
    std::string who(int rank) const;
    // Ranks grouped by host, bounded: "ranks 0-3 on node0, ranks 4-7 on node1"; past three hosts
    // "256 ranks (512-767) on 32 hosts (node64, node65, node66, …)".
    std::string whoAll(const std::vector<int>& ranks) const;
    // The ranks of `ranks` on each host, hosts in the order of their first rank.
    std::vector<std::pair<std::string, std::vector<int>>> byHost(const std::vector<int>& ranks) const;
    std::string since(Clock::time_point t, Clock::time_point now) const;

    Options m_options;
    int m_world = 0;
    int m_dp = 1, m_tp = 1, m_pp = 1;
    bool m_layoutKnown = false; // unknown: every rank of one stage
    std::function<std::string(int)> m_hostOf;
    std::optional<Clock::time_point> m_lastStep;
    int64_t m_lastStepNumber = -1;
    std::deque<double> m_stepMs; // recent steps' wall time, for the hang threshold
    struct RankState {
        CommEvent last;
        Clock::time_point arrived;
        bool seen = false;
    };
    std::map<int, RankState> m_ranks;
    std::map<int, std::deque<std::pair<int64_t, double>>> m_compute; // rank -> (step, compute ms)
    std::map<int, size_t> m_rankSteps; // rank -> steps seen
};

} // namespace parallax

#pragma once

#include "core/launch/HostWatch.h"
#include "core/launch/NoticeSink.h"

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace parallax {

// What the supervisor says and decides of each host of a run (target = "hosts") from what its
// HostWatch sees: a host is answering, silent (no sign of life for a few seconds: said at once)
// or lost (silent past launch.host_timeout_s: the run ends on every host, since mpirun never
// notices a host cut off). A host that answers again is said too, and so is an ssh whose own
// answer takes a good part of the timeout. Each host's state goes to the store when it changes
// and every 10 s.
class HostStates {
public:
    using Clock = std::chrono::steady_clock;
    // A host's row for the store (the state filled in), and the ranks that run on a host ("rank 1").
    using Record = std::function<void(const HostStatus&)>;
    using RanksOn = std::function<std::string(const std::string& host)>;

    HostStates(int64_t hostTimeoutS, NoticeSink& notices, Record record, RanksOn ranksOn);

    // One look at every host. Returns why the run ends, once, when a host is lost while
    // `mayEnd` (the run is not being stopped already).
    std::optional<std::string> review(const std::vector<HostWatch::Look>& hosts, Clock::time_point now, bool mayEnd);
    // host -> answering | silent | lost, for each host looked at.
    const std::map<std::string, HostState>& states() const { return m_states; }

private:
    void sayIfSshIsSlow(const HostWatch::Look& h);

    int64_t m_timeoutS;
    NoticeSink& m_notices;
    Record m_record;
    RanksOn m_ranksOn;
    std::map<std::string, HostState> m_states;
    std::set<std::string> m_slowSshSaid;
    Clock::time_point m_lastRecord;
    bool m_lost = false;
};

} // namespace parallax

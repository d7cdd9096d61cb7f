#pragma once

#include "core/launch/LauncherProcess.h"
#include "core/spec/ClusterProfile.h"
#include "core/store/StoreTypes.h"

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace parallax {

// The supervisor's own view of whether each host of a run lives, independent of mpirun (which
// never notices a cut-off host), from every sign the run has: an ssh probe (`true`, every `every`,
// through one kept master connection per host) that answers, and any line a rank on that host
// prints (sawRankOn). A host is silent for the time since its last sign. Silence counts from the
// host's first sign of life: before it (ssh logins and the launch take their time) a host is given
// `firstSign` before its silence counts. A probe is given at least `probeTimeout` and three times
// the slowest answer seen, and twice as long after one that got no answer in its time (up to 30 s):
// a slow login is a cost to measure, not silence. A master that ended
// (its link died: ServerAliveInterval) is started again on the next probe.
class HostWatch {
public:
    using Clock = std::chrono::steady_clock;

    // `runDir`: the run's folder, named on the command each master runs there, so that a host's
    // cleanup finds a session the link's loss left behind (HostSweep); empty: the masters run none.
    HostWatch(const ClusterProfile& cluster, std::string controlFolder, std::string runDir = {},
              std::chrono::milliseconds every = std::chrono::seconds(2),
              std::chrono::milliseconds probeTimeout = std::chrono::seconds(4),
              std::chrono::milliseconds firstSign = std::chrono::seconds(60));
    ~HostWatch(); // ends every master and probe
    HostWatch(const HostWatch&) = delete;
    HostWatch& operator=(const HostWatch&) = delete;

    // Starts and reaps probes; cheap, call it on every turn of the supervising loop: it looks at the
    // hosts at most every kPollEvery (at 1,024 ranks the loop turns some 2,000 times a second), and
    // the hosts' probes are spread over the period (host i of n first at i/n of it), not all started
    // in one turn.
    static constexpr std::chrono::milliseconds kPollEvery{50};
    void poll();
    // How many times poll() looked at the hosts.
    int64_t looks() const { return m_looks; }

    // `name` (as the host calls itself, e.g. in the ranks' run_start) is the host `watched` (as the
    // profile names it, e.g. an address); names that are equal, or one the other plus a domain,
    // match without this.
    void addAlias(const std::string& name, const std::string& watched);
    // A line of a rank on the host that calls itself `name` arrived now: a sign of life.
    void sawRankOn(const std::string& name);

    struct Host {
        std::string name;
        Clock::time_point last_answer; // the watch's start until the first answer
        bool answered_once = false;
        Clock::time_point last_sign;   // the latest answer or rank line
        bool signed_once = false;
        double latency_ms = -1;
        double slowest_ms = -1;        // the slowest probe answer so far
        std::chrono::milliseconds probe_limit{0}; // how long its next probe may take (probeLimit)
        std::string last_error;        // what the last failed probe said
        std::unique_ptr<LauncherProcess> master;
        std::unique_ptr<LauncherProcess> probe;
        Clock::time_point probe_started;
        Clock::time_point next_probe;
        std::string probe_err;
    };
    const std::vector<Host>& hosts() const { return m_hosts; }
    // How long `host` has given no sign of life (zero while it does; see the class comment).
    std::chrono::milliseconds silentFor(const Host& host) const;
    // How long a probe of `host` may take before it counts as unanswered.
    std::chrono::milliseconds probeLimit(const Host& host) const;
    // The state as the store keeps it: answering, or silent for N s.
    HostStatus status(const Host& host) const; // its state is HostStates' to decide

    // Each host as it is now, for the supervisor's decisions (HostStates).
    struct Look {
        std::string name;
        std::chrono::milliseconds silent{0}; // silentFor()
        std::string last_error;
        double slowest_ms = -1;
        HostStatus status; // status() with the state left empty
    };
    std::vector<Look> look() const;

private:
    void startMaster(Host& h);
    std::vector<std::string> probeCommand(const Host& h) const;
    std::string controlPath(size_t index) const;

    SshSettings m_ssh;
    std::string m_folder;
    std::string m_runDir;
    std::chrono::milliseconds m_every;
    std::chrono::milliseconds m_probeTimeout;
    std::chrono::milliseconds m_firstSign;
    Clock::time_point m_start;
    Clock::time_point m_nextLook;
    int64_t m_looks = 0;
    std::vector<Host> m_hosts;
    std::map<std::string, size_t> m_byName; // host names and aliases -> index in m_hosts
};

} // namespace parallax

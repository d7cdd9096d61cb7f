#pragma once

#include "core/launch/LauncherProcess.h"
#include "core/spec/ClusterProfile.h"
#include "core/store/StoreTypes.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace parallax {

// The supervisor's own view of whether each host of a run answers, independent of mpirun (which
// never notices a cut-off host): one ssh master connection per host, and through it a probe (`true`)
// every `every`. A probe that has not answered within `probeTimeout` is ended; a host answers as
// long as its last answer is recent. A master that ended (its link died: ServerAliveInterval) is
// started again on the next probe.
class HostWatch {
public:
    using Clock = std::chrono::steady_clock;

    HostWatch(const ClusterProfile& cluster, std::string controlFolder,
              std::chrono::milliseconds every = std::chrono::seconds(2),
              std::chrono::milliseconds probeTimeout = std::chrono::seconds(4));
    ~HostWatch(); // ends every master and probe
    HostWatch(const HostWatch&) = delete;
    HostWatch& operator=(const HostWatch&) = delete;

    // Starts and reaps probes; cheap, call it on every turn of the supervising loop.
    void poll();

    struct Host {
        std::string name;
        Clock::time_point last_answer; // the watch's start until the first answer
        bool answered_once = false;
        double latency_ms = -1;
        std::string last_error;        // what the last failed probe said
        std::unique_ptr<LauncherProcess> master;
        std::unique_ptr<LauncherProcess> probe;
        Clock::time_point probe_started;
        Clock::time_point next_probe;
        std::string probe_err;
    };
    const std::vector<Host>& hosts() const { return m_hosts; }
    // How long `host` has not answered (zero while it answers).
    std::chrono::milliseconds silentFor(const Host& host) const;
    // The state as the store keeps it: answering, or silent for N s.
    HostStatus status(const Host& host, const std::string& state) const;

private:
    void startMaster(Host& h);
    std::vector<std::string> probeCommand(const Host& h) const;
    std::string controlPath(size_t index) const;

    SshSettings m_ssh;
    std::string m_folder;
    std::chrono::milliseconds m_every;
    std::chrono::milliseconds m_probeTimeout;
    std::vector<Host> m_hosts;
};

} // namespace parallax

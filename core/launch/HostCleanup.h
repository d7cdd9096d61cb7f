#pragma once

#include "core/spec/ClusterProfile.h"
#include "core/store/RunStore.h"

#include <chrono>
#include <string>
#include <vector>

namespace parallax {

// What ending a run's processes on one host did.
struct HostCleanupResult {
    std::string host;
    bool reached = false;
    int64_t ended = 0;   // processes that were still running there
    std::string error;   // why the host could not be reached
};

// Ends every process of the run whose folder is `runDir` on each of `hosts` over ssh, all hosts at
// once: the ranks (each has --run-dir <runDir> on its command line, so that a recycled pid is never
// hit) and the orted that started them; SIGTERM, then SIGKILL two seconds later for what is left.
std::vector<HostCleanupResult> cleanUpHosts(const std::vector<std::string>& hosts, const SshSettings& ssh,
                                            const std::string& runDir,
                                            std::chrono::milliseconds timeout = std::chrono::seconds(10));

// The cleanups the store keeps for hosts that could not be reached, tried again: a host that
// answers now is cleaned and its row removed; one that does not keeps it (with the attempt noted).
// Profiles are read again from the runs' specs. Returns one line per host tried.
std::vector<std::string> retryPendingCleanups(RunStore& store);

} // namespace parallax

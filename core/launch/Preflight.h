#pragma once

#include "core/spec/ClusterProfile.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace parallax {

// What preflight found on one host.
struct HostCheck {
    std::string host;
    bool reachable = false;
    double latency_ms = -1;     // of the whole check over ssh
    std::string hostname;       // as the host names itself
    int64_t cores = 0;
    int64_t slot_count = 0;          // from the profile or launch.hosts
    std::string worker_build;   // the SHA-256 of the worker there: the same build is the same bytes
    double load = -1;           // 1-minute load average
    int64_t ranks_running = 0;  // parallax-worker processes running there now (any run's)
    std::vector<std::string> gpus; // "NVIDIA H200, 143771 MiB" per GPU (nvidia-smi), none on CPU hosts
    std::vector<std::string> problems; // each names the host and the fix; empty: ready
    std::vector<std::string> notes;    // worth saying, not a reason to stop
};

struct PreflightOptions {
    std::string local_worker;     // the worker here, whose build the hosts must have
    std::string local_build;      // its SHA-256; empty: computed from local_worker
    std::string shared_folder;    // must be the same folder on every host (the run folders' root)
    int64_t processes = 0;        // ranks the run starts (0: no slot check)
    int timeout_s = 5;            // per host, for the whole check
};

// Checks every host at once over ssh (batch mode, so a host that wants a password fails instead of
// asking): it answers within the timeout, the worker is at its path there and is the same build
// as the local one (the same bytes: its SHA-256; starting the worker to ask its --version would
// load LibTorch, seconds on a busy host), its slots and cores, and that the shared folder is the same folder there (a
// token written here is read back over ssh). Problems name the host and what to do.
std::vector<HostCheck> preflight(const ClusterProfile& cluster, const PreflightOptions& options);

// target = "slurm", before anything is submitted: Slurm answers (scontrol), the partition exists (the
// default one when launch.partition is empty) and is up, and the request fits it: its nodes, the
// CPUs of a node for launch.tasks_per_node, and all its CPUs for the processes. Each problem names
// the field and the fix.
std::vector<std::string> slurmPreflight(const RunSpec& spec, int timeoutS = 10);

// Every problem of `checks`, one per line (empty when every host is ready).
std::vector<std::string> preflightProblems(const std::vector<HostCheck>& checks);

// Thrown before a run on hosts is created when a host is not ready: what() lists each problem.
class PreflightFailed : public std::runtime_error {
public:
    explicit PreflightFailed(std::vector<std::string> problems);
    const std::vector<std::string>& problems() const { return m_problems; }

private:
    std::vector<std::string> m_problems;
};

// The SHA-256 of a worker executable, as sha256sum prints it; empty when it cannot be read.
std::string workerBuild(const std::string& worker);

} // namespace parallax

#pragma once

#include "core/launch/HostSweep.h"
#include "core/spec/ClusterProfile.h"
#include "core/store/RunStore.h"

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace parallax {

// What ending runs' processes on one host did.
struct HostCleanupResult {
    std::string host;
    bool reached = false;  // the sweep ran there to its end
    bool answered = false; // the host answered (reached, or it answered with an error)
    int64_t ended = 0;     // processes that were still running there
    std::string error;     // why the host could not be reached, or what it answered
};

// Where the locks that keep sweeps of one host apart live for the store at `storePath`: one
// sweep of a host at a time among every supervisor and cleanup of that store.
std::string cleanupLockFolder(const std::string& storePath);

// One host to sweep, and for which run folders.
struct HostSweepJob {
    std::string host;
    SshSettings ssh;
    std::vector<std::string> run_dirs;
};

// Sweeps every job's host over ssh (HostSweep), all at once, each under its host's lock in
// `lockFolder`: a host whose lock another sweep holds for longer than `lockWait` is not reached
// this time (its error says so). One result per job, in their order.
std::vector<HostCleanupResult> cleanUpHosts(const std::vector<HostSweepJob>& jobs, const std::string& lockFolder,
                                            std::chrono::milliseconds lockWait = std::chrono::seconds(45));

// The cleanups the store keeps for hosts that could not be reached, tried again by one process:
// each host once per round with every run folder due there, a host that does not answer again
// after 5 s, then 10, 20... up to 5 minutes. A host that answers is cleaned and its rows removed;
// one that does not keeps them (the attempt and its error noted). ssh settings come from the
// newest run's spec of each host.
class PendingCleaner {
public:
    using Clock = std::chrono::steady_clock;
    static constexpr std::chrono::seconds kFirstDelay{5};
    static constexpr std::chrono::seconds kLongestDelay{300};

    explicit PendingCleaner(std::string storePath) : m_storePath(std::move(storePath)) {}

    // Tries the hosts that are due; returns one line per host tried.
    std::vector<std::string> round();
    // When the next host is due; std::nullopt when no cleanup is pending.
    std::optional<Clock::time_point> nextDue() const;
    size_t pendingHosts() const { return m_hostsLeft; }

private:
    struct Backoff {
        Clock::time_point due{};
        std::chrono::seconds delay = kFirstDelay;
    };
    std::string m_storePath;
    std::map<std::string, Backoff> m_backoff;
    size_t m_hostsLeft = 0;
};

// Whether this process may clean the store's pending hosts now: it holds the store's cleaner lock
// (one cleaner per store, however many runs left hosts unswept). Released when destroyed.
class CleanerLock {
public:
    explicit CleanerLock(const std::string& storePath);
    ~CleanerLock();
    CleanerLock(const CleanerLock&) = delete;
    CleanerLock& operator=(const CleanerLock&) = delete;
    bool held() const { return m_fd >= 0; }
    // Whether another process holds the store's cleaner lock now (false also where the lock cannot
    // be opened: then nobody can be cleaning).
    static bool heldElsewhere(const std::string& storePath);
    // Lets go and takes it again at once when it is free (false: another cleaner has it).
    void release();
    bool retake();

private:
    std::string m_path;
    int m_fd = -1;
};

} // namespace parallax

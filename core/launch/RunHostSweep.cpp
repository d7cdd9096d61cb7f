#include "core/launch/RunHostSweep.h"

#include "core/launch/HostCleanup.h"

namespace parallax {

bool sweepRunHosts(RunStore& store, const ClusterProfile& cluster, int64_t runId, const std::string& runDir,
                   NoticeSink& notices, const std::function<void(const std::exception&)>& onStoreError) {
    std::vector<HostSweepJob> jobs;
    for (const std::string& entry : cluster.hosts) {
        const std::optional<HostSlots> h = parseHostSlots(entry);
        jobs.push_back({h ? h->name : entry, cluster.ssh, {runDir}});
    }
    bool pending = false;
    for (const HostCleanupResult& r : cleanUpHosts(jobs, cleanupLockFolder(store.path()))) {
        if (r.reached) {
            if (r.ended > 0)
                notices.notice(LogLevel::Warn, r.host + ": ended " + std::to_string(r.ended) +
                                           " process(es) of the run that were still running there");
            continue;
        }
        notices.notice(LogLevel::Warn, r.host + ": cannot end the run's processes there now (" +
                                   (r.answered ? "it answered with an error: " : std::string()) + r.error +
                                   "); that is done as soon as it answers again (parallax-cli cleanup)");
        try {
            PendingCleanup c;
            c.run = runId;
            c.host = r.host;
            c.run_dir = runDir;
            c.last_error = r.error;
            store.addPendingCleanup(c);
            pending = true;
        } catch (const std::exception& e) {
            onStoreError(e);
        }
    }
    return pending;
}

} // namespace parallax

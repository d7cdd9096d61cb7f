#pragma once

#include "core/store/StoreConnection.h"
#include "core/store/StoreTypes.h"

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// The hosts of runs on hosts: how each answers its run's supervisor (one row per run and host,
// the latest replacing the earlier), and the hosts still to be cleaned of a run's processes because
// they could not be reached when it ended (see RunStore for each call).
class HostRecords {
public:
    explicit HostRecords(StoreConnection& connection) : m_c(connection) {}

    void setHostStatus(int64_t run, const HostStatus& status);
    std::vector<HostStatus> hostStatuses(int64_t run) const;
    void addPendingCleanup(const PendingCleanup& c);
    void removePendingCleanup(int64_t run, const std::string& host);
    void notePendingCleanupAttempt(int64_t run, const std::string& host, const std::string& error);
    std::vector<PendingCleanup> pendingCleanups() const;
    // The run's host statuses. Its pending cleanups stay: the hosts may still run its processes.
    void deleteRunRows(int64_t run);

private:
    StoreConnection& m_c;
};

} // namespace parallax

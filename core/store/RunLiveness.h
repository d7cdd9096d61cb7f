#pragma once

#include "core/store/StoreConnection.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace parallax {

// Which supervisor follows a run, and the runs whose supervisor is gone: marked running by theirs,
// found lost by the next supervisor or console on its host, or left to `attach` when they run in a
// Slurm batch job (see RunStore for each call).
class RunLiveness {
public:
    explicit RunLiveness(StoreConnection& connection) : m_c(connection) {}

    void markRunning(int64_t id, int64_t supervisorPid, const std::string& supervisorHost);
    void setSupervisor(int64_t id, int64_t supervisorPid, const std::string& supervisorHost);
    std::vector<int64_t> markLostRuns(const std::string& host, const std::function<bool(int64_t pid)>& isAlive);
    std::vector<int64_t> unfollowedBatchRuns(const std::string& host,
                                             const std::function<bool(int64_t pid)>& isAlive) const;

private:
    // The state of run `id`; throws "run ID does not exist" (naming `what`) when there is none.
    std::string stateOf(int64_t id, const char* what) const;

    StoreConnection& m_c;
};

} // namespace parallax

#pragma once

#include "core/launch/NoticeSink.h"
#include "core/store/StoreTypes.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace parallax {

// retention.disk_budget_gb: the run's folder (output segments, checkpoints, flight recorders) plus
// its share of the store (how much the store's files, with their write-ahead log, grew since the
// run began) measured now and then; past the budget, one warning alert (AlertKind::DiskBudget)
// and one notice naming the sizes and what to do. It is raised once per run.
class DiskBudget {
public:
    using Clock = std::chrono::steady_clock;

    DiskBudget(double budgetGb, std::string runDir, std::string storePath, NoticeSink& notices,
               std::function<void(const RunAlert&)> raise, std::chrono::seconds every = std::chrono::seconds(60));

    // Measures when `every` has passed since the last measure; returns true when it raised the alert.
    bool check(Clock::time_point now);
    bool raised() const { return m_raised; }

    // The bytes of the regular files under `dir`, every level (0 for a folder that is not there).
    static int64_t folderBytes(const std::string& dir);
    // The store file's bytes with its -wal and -shm files.
    static int64_t storeBytes(const std::string& storePath);

private:
    bool measure();

    int64_t m_budget; // bytes; 0: none
    std::string m_runDir;
    std::string m_storePath;
    NoticeSink& m_notices;
    std::function<void(const RunAlert&)> m_raise;
    std::chrono::seconds m_every;
    int64_t m_storeAtStart = 0;
    bool m_measured = false;
    Clock::time_point m_lastCheck;
    bool m_raised = false;
};

} // namespace parallax

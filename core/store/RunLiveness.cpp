#include "core/store/RunLiveness.h"

#include "core/store/StoreTypes.h"

#include <utility>

namespace parallax {

std::string RunLiveness::stateOf(int64_t id, const char* what) const {
    SqlStatement& s = m_c.get("SELECT state FROM runs WHERE id = ?1");
    SqlStatement::Use use(s);
    s.bind(1, id);
    if (s.step()) return s.text(0);
    throw StoreError("store " + m_c.path() + ": " + what + ": run " + std::to_string(id) + " does not exist");
}

void RunLiveness::markRunning(int64_t id, int64_t supervisorPid, const std::string& supervisorHost) {
    // A run marked lost by a console that could not see its supervisor comes back to life here;
    // a run that ended does not (resuming creates a new run).
    m_c.execute("UPDATE runs SET state = 'running', supervisor_pid = ?2, supervisor_host = ?3, "
                "started_at = CASE WHEN started_at > 0 THEN started_at ELSE ?4 END, ended_at = 0 "
                "WHERE id = ?1 AND state IN ('queued', 'running', 'lost')",
                {id, supervisorPid, supervisorHost, nowSeconds()});
    if (m_c.changes() == 0) {
        throw StoreError("markRunning: run " + std::to_string(id) + " already ended (" + stateOf(id, "markRunning") +
                         "); start a new run to train again");
    }
}

void RunLiveness::setSupervisor(int64_t id, int64_t supervisorPid, const std::string& supervisorHost) {
    m_c.execute("UPDATE runs SET supervisor_pid = ?2, supervisor_host = ?3 WHERE id = ?1 AND state IN ('queued', "
                "'running')",
                {id, supervisorPid, supervisorHost});
    if (m_c.changes() == 0) {
        throw StoreError("setSupervisor: run " + std::to_string(id) + " is " + stateOf(id, "setSupervisor") +
                         ", not queued or running");
    }
}

std::vector<int64_t> RunLiveness::markLostRuns(const std::string& host,
                                               const std::function<bool(int64_t pid)>& isAlive) {
    std::vector<std::pair<int64_t, int64_t>> candidates; // id, pid
    {
        SqlStatement& s = m_c.get(
            "SELECT id, supervisor_pid FROM runs WHERE state IN ('queued', 'running') "
            "AND supervisor_host = ?1 AND supervisor_pid > 0 "
            "AND id NOT IN (SELECT run FROM slurm_jobs WHERE mode = 'batch')");
        SqlStatement::Use use(s);
        s.bind(1, host);
        while (s.step()) candidates.emplace_back(s.int64(0), s.int64(1));
    }
    std::vector<int64_t> lost;
    for (const auto& [id, pid] : candidates) {
        if (isAlive(pid)) continue;
        // The state test again: the supervisor may have finished the run in the meantime.
        const std::string reason =
            "its supervisor (pid " + std::to_string(pid) + " on " + host + ") is no longer running";
        m_c.execute("UPDATE runs SET state = 'lost', ended_at = ?2, exit_reason = ?3 "
                    "WHERE id = ?1 AND state IN ('queued', 'running') AND supervisor_pid = ?4",
                    {id, nowSeconds(), reason, pid});
        if (m_c.changes() > 0) lost.push_back(id);
    }
    return lost;
}

std::vector<int64_t> RunLiveness::unfollowedBatchRuns(const std::string& host,
                                                      const std::function<bool(int64_t pid)>& isAlive) const {
    SqlStatement& s = m_c.get(
        "SELECT id, supervisor_pid, supervisor_host FROM runs WHERE state IN ('queued', 'running') "
        "AND id IN (SELECT run FROM slurm_jobs WHERE mode = 'batch') ORDER BY id");
    SqlStatement::Use use(s);
    std::vector<std::pair<int64_t, std::pair<int64_t, std::string>>> rows;
    while (s.step()) rows.push_back({s.int64(0), {s.int64(1), s.text(2)}});
    std::vector<int64_t> out;
    for (const auto& [id, supervisor] : rows) {
        const auto& [pid, where] = supervisor;
        if (pid <= 0 || (where == host && !isAlive(pid))) out.push_back(id);
    }
    return out;
}

} // namespace parallax

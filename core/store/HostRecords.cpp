#include "core/store/HostRecords.h"

namespace parallax {

void HostRecords::setHostStatus(int64_t run, const HostStatus& h) {
    SqlStatement& s = m_c.get(
        "INSERT OR REPLACE INTO host_status (run, host, state, last_answer, latency_ms, detail, t) "
        "VALUES (?1,?2,?3,?4,?5,?6,?7)");
    s.bind(1, run);
    s.bind(2, h.host);
    s.bindCopy(3, hostStateName(h.state));
    if (h.last_answer > 0) s.bind(4, h.last_answer);
    else s.bindNull(4);
    if (h.latency_ms >= 0) s.bind(5, h.latency_ms);
    else s.bindNull(5);
    s.bind(6, h.detail);
    s.bind(7, h.t > 0 ? h.t : nowSeconds());
    s.run();
}

std::vector<HostStatus> HostRecords::hostStatuses(int64_t run) const {
    SqlStatement& s = m_c.get(
        "SELECT host, state, last_answer, latency_ms, detail, t FROM host_status WHERE run = ?1 ORDER BY host");
    SqlStatement::Use use(s);
    s.bind(1, run);
    std::vector<HostStatus> out;
    while (s.step()) {
        // A state a newer version wrote is left out rather than shown as another.
        const std::optional<HostState> state = hostStateNamed(s.text(1));
        if (!state) continue;
        HostStatus h;
        h.host = s.text(0);
        h.state = *state;
        h.last_answer = s.isNull(2) ? 0 : s.real(2);
        h.latency_ms = s.isNull(3) ? -1 : s.real(3);
        h.detail = s.text(4);
        h.t = s.real(5);
        out.push_back(h);
    }
    return out;
}

void HostRecords::addPendingCleanup(const PendingCleanup& c) {
    m_c.execute("INSERT OR REPLACE INTO pending_cleanups (run, host, run_dir, since, attempts, last_error) "
                "VALUES (?1,?2,?3,?4,?5,?6)",
                {c.run, c.host, c.run_dir, c.since > 0 ? c.since : nowSeconds(), c.attempts, c.last_error});
}

void HostRecords::removePendingCleanup(int64_t run, const std::string& host) {
    m_c.execute("DELETE FROM pending_cleanups WHERE run = ?1 AND host = ?2", {run, host});
}

void HostRecords::notePendingCleanupAttempt(int64_t run, const std::string& host, const std::string& error) {
    m_c.execute("UPDATE pending_cleanups SET attempts = attempts + 1, last_error = ?3 WHERE run = ?1 AND host = ?2",
                {run, host, error});
}

std::vector<PendingCleanup> HostRecords::pendingCleanups() const {
    SqlStatement& s = m_c.get(
        "SELECT run, host, run_dir, since, attempts, last_error FROM pending_cleanups ORDER BY since, run, host");
    SqlStatement::Use use(s);
    std::vector<PendingCleanup> out;
    while (s.step()) {
        PendingCleanup c;
        c.run = s.int64(0);
        c.host = s.text(1);
        c.run_dir = s.text(2);
        c.since = s.real(3);
        c.attempts = s.int64(4);
        c.last_error = s.text(5);
        out.push_back(c);
    }
    return out;
}

void HostRecords::deleteRunRows(int64_t run) { m_c.execute("DELETE FROM host_status WHERE run = ?1", {run}); }

} // namespace parallax

#include "core/store/RunAlerts.h"

#include <sstream>
#include <string>

namespace parallax {

void RunAlerts::setAlert(int64_t run, const RunAlert& a) {
    SqlStatement& s = m_c.get(
        "INSERT INTO alerts (run, kind, message, since, t, active, ranks, step) VALUES (?1,?2,?3,?4,?5,?6,?7,?8) "
        "ON CONFLICT (run, kind) DO UPDATE SET message = excluded.message, t = excluded.t, "
        "active = excluded.active, ranks = excluded.ranks, "
        "step = CASE WHEN alerts.active = 1 AND excluded.active = 1 THEN alerts.step ELSE excluded.step END, since = CASE WHEN alerts.active = 1 AND excluded.active = 1 THEN alerts.since "
        "ELSE excluded.since END");
    const double now = a.t > 0 ? a.t : nowSeconds();
    s.bind(1, run);
    s.bindCopy(2, alertKindName(a.kind));
    s.bind(3, a.message);
    s.bind(4, a.since > 0 ? a.since : now);
    s.bind(5, now);
    s.bind(6, static_cast<int64_t>(a.active ? 1 : 0));
    std::string ranks;
    for (int r : a.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
    s.bind(7, ranks);
    if (a.step >= 0)
        s.bind(8, a.step);
    else
        s.bindNull(8);
    s.run();
}

std::vector<RunAlert> RunAlerts::alerts(int64_t run) const {
    SqlStatement& s =
        m_c.get("SELECT kind, message, since, t, active, ranks, step FROM alerts WHERE run = ?1 ORDER BY kind");
    SqlStatement::Use use(s);
    s.bind(1, run);
    std::vector<RunAlert> out;
    while (s.step()) {
        // A kind a newer version raised is left out.
        const std::optional<AlertKind> kind = alertKindNamed(s.text(0));
        if (!kind) continue;
        RunAlert a;
        a.kind = *kind;
        a.message = s.text(1);
        a.since = s.real(2);
        a.t = s.real(3);
        a.active = s.int64(4) != 0;
        std::istringstream ranks(s.text(5));
        for (std::string r; std::getline(ranks, r, ',');)
            if (!r.empty()) a.ranks.push_back(std::stoi(r));
        a.step = s.isNull(6) ? -1 : s.int64(6);
        out.push_back(a);
    }
    return out;
}

void RunAlerts::deleteRunRows(int64_t run) { m_c.execute("DELETE FROM alerts WHERE run = ?1", {run}); }

} // namespace parallax

#include "core/store/RunQueries.h"

#include "core/store/JsonLists.h"
#include "core/store/SqlText.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <limits>
#include <utility>

namespace parallax {

namespace {

std::string runColumns() {
    return "id, name, state, created_at, started_at, ended_at, hosts, world_size, exit_code, "
           "exit_reason, supervisor_pid, supervisor_host, parent_run, tags, notes, run_dir, "
           "launch_command, model_kind, layout, params, steps_total, last_step, last_loss, "
           "tokens_per_s, mfu, spec_toml";
}

RunRecord readRun(const SqlStatement& s) {
    RunRecord r;
    r.id = s.int64(0);
    r.name = s.text(1);
    const std::string state = s.text(2);
    const std::optional<RunState> known = runStateNamed(state);
    if (!known)
        throw StoreError("run " + std::to_string(r.id) + " is in state '" + state +
                         "', which this version does not know; open the store with the version that wrote it");
    r.state = *known;
    r.created_at = s.real(3);
    r.started_at = s.real(4);
    r.ended_at = s.real(5);
    r.hosts = json_lists::stringsOrText(s.text(6));
    r.world_size = static_cast<int>(s.int64(7));
    if (!s.isNull(8)) r.exit_code = static_cast<int>(s.int64(8));
    r.exit_reason = s.text(9);
    r.supervisor_pid = s.int64(10);
    r.supervisor_host = s.text(11);
    r.parent_run = s.optInt64(12);
    r.tags = json_lists::stringsOrText(s.text(13));
    r.notes = s.text(14);
    r.run_dir = s.text(15);
    r.launch_command = s.text(16);
    r.model_kind = s.text(17);
    r.layout = s.text(18);
    r.params = s.int64(19);
    r.steps_total = s.int64(20);
    r.last_step = s.int64(21);
    r.last_loss = s.optReal(22);
    // A recorded step with a NULL loss had a NaN loss (SQLite cannot store NaN).
    if (!r.last_loss && r.last_step >= 0) r.last_loss = std::numeric_limits<double>::quiet_NaN();
    r.tokens_per_s = s.optReal(23);
    r.mfu = s.optReal(24);
    r.spec_toml = s.text(25);
    return r;
}

// LIKE pattern matching `text` anywhere, with LIKE's wildcards in `text` taken literally.
std::string likePattern(const std::string& text) {
    std::string p = "%";
    for (char c : text) {
        if (c == '%' || c == '_' || c == '\\') p += '\\';
        p += c;
    }
    p += '%';
    return p;
}

bool isAllDigits(const std::string& s) {
    return !s.empty() && s.size() <= 18 &&
           std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::string trimmed(const std::string& s) {
    const auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return {};
    const auto e = s.find_last_not_of(" \t\r\n");
    return s.substr(b, e - b + 1);
}

// The ORDER BY expression of `orderBy`: looked up, never pasted, so that only these expressions can
// reach the SQL text. A '?' in one is the current time (the duration of a run still going).
const std::string& orderExpression(const std::string& orderBy) {
    static const std::vector<std::pair<std::string, std::string>> orderColumns = {
        {"id", "id"},
        {"name", "name COLLATE NOCASE"},
        {"state", "state"},
        {"created_at", "created_at"},
        {"started_at", "NULLIF(started_at, 0)"}, // 0: not yet, sorted with the runs lacking a value
        {"ended_at", "NULLIF(ended_at, 0)"},
        {"last_loss", "last_loss"},
        {"tokens_per_s", "tokens_per_s"},
        {"mfu", "mfu"},
        {"last_step", "NULLIF(last_step, -1)"},
        {"world_size", "world_size"},
        {"duration", "(CASE WHEN started_at > 0 THEN (CASE WHEN ended_at > 0 THEN ended_at "
                     "ELSE ? END) - started_at END)"},
    };
    const std::string key = orderBy.empty() ? "id" : orderBy;
    auto col = std::find_if(orderColumns.begin(), orderColumns.end(), [&](const auto& p) { return p.first == key; });
    if (col == orderColumns.end()) {
        std::string names;
        for (const auto& p : orderColumns) names += (names.empty() ? "" : ", ") + p.first;
        throw StoreError("listRuns: cannot sort by '" + orderBy + "'; use one of " + names);
    }
    return col->second;
}

} // namespace

std::optional<RunRecord> RunQueries::run(int64_t id) const {
    SqlStatement& s = m_c.get("SELECT " + runColumns() + " FROM runs WHERE id = ?1");
    SqlStatement::Use use(s);
    s.bind(1, id);
    if (!s.step()) return std::nullopt;
    return readRun(s);
}

std::vector<int64_t> RunQueries::lineage(int64_t id) const {
    std::vector<int64_t> up{id};
    for (std::optional<RunRecord> r = run(id); r && r->parent_run;) {
        const int64_t parent = *r->parent_run;
        if (std::find(up.begin(), up.end(), parent) != up.end()) break; // never, but not forever
        up.push_back(parent);
        r = run(parent);
    }
    std::vector<int64_t> out(up.rbegin(), up.rend());
    SqlStatement& s = m_c.get("SELECT id FROM runs WHERE parent_run = ?1 ORDER BY id DESC LIMIT 1");
    for (int64_t at = id;;) {
        std::optional<int64_t> child;
        {
            SqlStatement::Use use(s);
            s.bind(1, at);
            if (s.step()) child = s.int64(0);
        }
        if (!child || std::find(out.begin(), out.end(), *child) != out.end()) break;
        out.push_back(*child);
        at = *child;
    }
    return out;
}

std::optional<RunRecord> RunQueries::latestRunNamed(const std::string& name) const {
    SqlStatement& s = m_c.get("SELECT " + runColumns() + " FROM runs WHERE name = ?1 ORDER BY id DESC LIMIT 1");
    SqlStatement::Use use(s);
    s.bind(1, name);
    if (!s.step()) return std::nullopt;
    return readRun(s);
}

std::optional<RunRecord> RunQueries::findRun(const std::string& idOrName) const {
    const std::string key = trimmed(idOrName);
    if (key.empty()) return std::nullopt;
    if (isAllDigits(key)) {
        if (auto r = run(std::stoll(key))) return r;
        // A run may be named "42" too.
    }
    return latestRunNamed(key);
}

std::vector<RunRecord> RunQueries::listRuns(const RunFilter& filter) const {
    const std::string& order = orderExpression(filter.order_by);
    std::vector<SqlStatement::Value> values;
    std::string sql = "SELECT " + runColumns() + " FROM runs WHERE 1";
    if (!filter.text.empty()) {
        const std::string pattern = likePattern(filter.text);
        sql += " AND (";
        const char* columns[] = {"name", "model_kind", "layout", "tags", "notes"};
        for (size_t c = 0; c < std::size(columns); ++c) {
            sql += std::string(c ? " OR " : "") + columns[c] + " LIKE ? ESCAPE '\\'";
            values.emplace_back(pattern);
        }
        sql += ")";
    }
    if (!filter.states.empty()) {
        sql += " AND state IN (" + sql::placeholders(filter.states.size()) + ")";
        for (const RunState st : filter.states) values.emplace_back(runStateName(st));
    }
    const std::string dir = filter.descending ? " DESC" : " ASC";
    sql += " ORDER BY " + order + dir + " NULLS LAST";
    if (order.find('?') != std::string::npos) values.emplace_back(nowSeconds());
    if (!filter.order_by.empty() && filter.order_by != "id") sql += ", id" + dir;
    if (filter.limit >= 0) {
        sql += " LIMIT ?";
        values.emplace_back(filter.limit);
    }

    SqlStatement& s = m_c.get(sql);
    SqlStatement::Use use(s);
    s.bindAll(values);
    std::vector<RunRecord> out;
    while (s.step()) out.push_back(readRun(s));
    return out;
}

} // namespace parallax

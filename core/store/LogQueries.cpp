#include "core/store/LogQueries.h"

#include "core/store/FtsQuery.h"
#include "core/store/LogIndex.h"
#include "core/store/LogLevel.h"
#include "core/store/SqlText.h"

#include <algorithm>

namespace parallax {

void LogQueries::buildFullText(int64_t run, const LogQuery& q, const std::string& match, const std::string& what,
                               bool coveringCount, Select& sel) const {
    // Every committed line of the run must be found: index those that are not yet.
    LogIndex& index = m_table.index();
    index.catchUp(run);
    // The full-text index covers every run; bounding its rowids to this run's id range keeps
    // a search in one run from walking the matches of all the others.
    int64_t lo = 0, hi = -1;
    try {
        SqlStatement& r = index.get("SELECT (SELECT min(id) FROM main.logs WHERE run = ?1), "
                                    "(SELECT max(id) FROM main.logs WHERE run = ?1)");
        SqlStatement::Use use(r);
        r.bind(1, run);
        if (r.step() && !r.isNull(0)) {
            lo = r.int64(0);
            hi = r.int64(1);
        }
    } catch (const StoreError& e) {
        index.rethrow(e);
    }
    lo = std::max(lo, q.after_id + 1);
    if (hi < lo) {
        sel.empty = true;
        return;
    }
    // Counting without other filters needs only the run of each match: the index on (run, id)
    // answers that without reading the lines (twice as fast on a million lines).
    sel.sql = "SELECT " + what + " FROM logindex.logs_fts CROSS JOIN main.logs AS l" +
              (coveringCount ? " INDEXED BY logs_by_run" : "") +
              " ON l.id = logs_fts.rowid"
              " WHERE logs_fts MATCH ? AND logs_fts.rowid >= ? AND logs_fts.rowid <= ?"
              " AND l.run = ?";
    sel.values.emplace_back(match);
    sel.values.emplace_back(lo);
    sel.values.emplace_back(hi);
    sel.values.emplace_back(run);
}

LogQueries::Select LogQueries::build(int64_t run, const LogQuery& q, bool count) const {
    Select sel;
    int minLevel = -1;
    if (!q.min_level.empty()) {
        minLevel = LogLevel::fromNameStrict(q.min_level);
        if (minLevel < 0) {
            throw StoreError("log query: unknown level '" + q.min_level + "'; use debug, info, warn or error");
        }
    }
    const std::string match = ftsQueryFromUserText(q.match);
    sel.fullText = !match.empty();
    const std::string what = count ? "count(*)" : "l.id, l.t, l.rank, l.host, l.level, l.stream, l.message";
    if (!sel.fullText) {
        sel.sql = "SELECT " + what + " FROM logs AS l WHERE l.run = ?";
        sel.values.emplace_back(run);
        if (q.after_id > 0) {
            sel.sql += " AND l.id > ?";
            sel.values.emplace_back(q.after_id);
        }
    } else {
        buildFullText(run, q, match, what, count && q.ranks.empty() && minLevel <= LogLevel::Debug, sel);
        if (sel.empty) return sel;
    }
    if (!q.ranks.empty()) {
        sel.sql += " AND l.rank IN (" + sql::placeholders(q.ranks.size()) + ")";
        for (int r : q.ranks) sel.values.emplace_back(static_cast<int64_t>(r));
    }
    if (minLevel > LogLevel::Debug) {
        sel.sql += " AND l.level >= ?";
        sel.values.emplace_back(static_cast<int64_t>(minLevel));
        // Spelled out so that the planner may use the partial index of warnings and errors.
        if (minLevel >= LogLevel::Warn) sel.sql += " AND l.level >= 2";
    }
    if (!count) {
        // The full-text index yields rowids in order, so ordering by its rowid needs no sort and
        // a LIMIT stops the search early.
        const std::string order = sel.fullText ? "logs_fts.rowid" : "l.id";
        sel.sql += " ORDER BY " + order + (q.descending ? " DESC" : "");
        sel.sql += " LIMIT ? OFFSET ?";
        sel.values.emplace_back(q.limit < 0 ? int64_t{-1} : q.limit);
        sel.values.emplace_back(std::max<int64_t>(0, q.offset));
    }
    return sel;
}

template <typename RowFn>
void LogQueries::run(const Select& sel, const LogQuery& q, RowFn&& onRow) const {
    try {
        // A text search runs on the log index's connection, where the index file is attached.
        SqlStatement& s = sel.fullText ? m_table.index().get(sel.sql) : m_c.get(sel.sql);
        SqlStatement::Use use(s);
        s.bindAll(sel.values);
        while (s.step()) onRow(s);
    } catch (const StoreError& e) {
        const std::string what = e.what();
        // FTS5's own syntax errors, and its tokenizer's for a quote never closed.
        auto at = what.find("fts5:");
        if (at == std::string::npos) at = what.find("unterminated string");
        if (!sel.fullText) throw;
        if (at == std::string::npos) m_table.index().rethrow(e); // names the index file when damaged
        const std::string reason = what.substr(at, what.find(" [", at) - at);
        throw StoreError("log search: cannot understand '" + q.match + "' (" + reason +
                         "). Plain words are matched as written; with double quotes, parentheses "
                         "or AND/OR/NOT the text is a full-text query, e.g. "
                         "\"out of memory\" OR nccl");
    }
}

std::vector<LogRow> LogQueries::logs(int64_t run, const LogQuery& q) const {
    const Select sel = build(run, q, /*count=*/false);
    std::vector<LogRow> out;
    if (sel.empty) return out;
    this->run(sel, q, [&](const SqlStatement& s) {
        LogRow r;
        r.id = s.int64(0);
        r.t = s.real(1);
        r.rank = static_cast<int>(s.int64(2));
        r.host = s.text(3);
        r.level = LogLevel::fromInt(s.int64(4));
        r.stream = s.text(5);
        r.message = s.text(6);
        out.push_back(std::move(r));
    });
    return out;
}

int64_t LogQueries::logCount(int64_t run, const LogQuery& q) const {
    const Select sel = build(run, q, /*count=*/true);
    if (sel.empty) return 0;
    int64_t n = 0;
    this->run(sel, q, [&](const SqlStatement& s) { n = s.int64(0); });
    return n;
}

} // namespace parallax

#include "core/store/SpanTable.h"

#include "core/store/SpanChunk.h"
#include "core/store/StoreTypes.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

namespace parallax {

namespace {

// The spans of `step` a schema 2 or earlier store wrote, one row each.
void readLegacyRows(SqlStatement& legacy, int64_t run, int64_t step, std::vector<SpanEvent>& out) {
    SqlStatement::Use use(legacy);
    legacy.bind(1, run);
    legacy.bind(2, step);
    while (legacy.step()) {
        SpanEvent e;
        e.rank = static_cast<int>(legacy.int64(0));
        e.stage = static_cast<int>(legacy.int64(1));
        e.step = legacy.int64(2);
        e.microbatch = static_cast<int>(legacy.int64(3));
        e.kind = legacy.text(4);
        e.start = legacy.real(5);
        e.end = legacy.realOrNaN(6);
        out.push_back(e);
    }
}

} // namespace

SpanTable::SpanTable(StoreConnection& connection)
    : m_c(connection),
      m_insertChunk(connection.prepare("INSERT OR REPLACE INTO span_chunks (run, step, rank, first_start, spans, "
                                       "data) VALUES (?1,?2,?3,?4,?5,?6)")) {}

void SpanTable::insertSpans(int64_t run, const std::vector<SpanEvent>& rows) {
    if (rows.empty()) return;
    // One row per (step, rank) of the batch.
    std::map<std::pair<int64_t, int>, std::vector<const SpanEvent*>> groups;
    for (const SpanEvent& e : rows) groups[{e.step, e.rank}].push_back(&e);
    ImplicitTransaction tx(m_c);
    SqlStatement& s = m_insertChunk;
    for (auto& [key, spans] : groups) {
        const std::string data = SpanChunk::encode(spans);
        double first = spans.front()->start;
        for (const SpanEvent* e : spans) first = std::min(first, e->start);
        s.bind(1, run);
        s.bind(2, key.first);
        s.bind(3, static_cast<int64_t>(key.second));
        s.bind(4, first);
        s.bind(5, static_cast<int64_t>(spans.size()));
        s.bindBlob(6, data);
        s.run();
    }
    tx.commit();
}

std::vector<int64_t> SpanTable::spanSteps(int64_t run) const {
    // Steps of schema 3 chunks and of older rows; a skip-scan over each primary key (one seek per
    // distinct step).
    SqlStatement& s = m_c.get(
        "WITH RECURSIVE chunked(step) AS ("
        "  SELECT (SELECT min(step) FROM span_chunks WHERE run = ?1)"
        "  UNION ALL"
        "  SELECT (SELECT min(step) FROM span_chunks WHERE run = ?1 AND step > chunked.step)"
        "  FROM chunked WHERE chunked.step IS NOT NULL"
        "), legacy(step) AS ("
        "  SELECT (SELECT min(step) FROM spans WHERE run = ?1)"
        "  UNION ALL"
        "  SELECT (SELECT min(step) FROM spans WHERE run = ?1 AND step > legacy.step)"
        "  FROM legacy WHERE legacy.step IS NOT NULL"
        ") SELECT step FROM chunked WHERE step IS NOT NULL UNION SELECT step FROM legacy WHERE step IS NOT NULL "
        "ORDER BY step");
    SqlStatement::Use use(s);
    s.bind(1, run);
    std::vector<int64_t> out;
    while (s.step()) out.push_back(s.int64(0));
    return out;
}

std::vector<SpanEvent> SpanTable::spans(int64_t run, int64_t step) const {
    std::vector<SpanEvent> out;
    readLegacyRows(
        m_c.get("SELECT rank, stage, step, microbatch, kind, start, end_t FROM spans WHERE run = ?1 AND step = ?2"),
        run, step, out);
    SqlStatement& s = m_c.get("SELECT rank, data FROM span_chunks WHERE run = ?1 AND step = ?2 ORDER BY rank, first_start");
    {
        SqlStatement::Use use(s);
        s.bind(1, run);
        s.bind(2, step);
        try {
            while (s.step()) SpanChunk::decode(s.blob(1), s.blobSize(1), step, static_cast<int>(s.int64(0)), out);
        } catch (const std::runtime_error& e) {
            throw StoreError(m_c.path() + ": " + e.what() + " (run " + std::to_string(run) + ", step " +
                             std::to_string(step) + "); the store is damaged, restore it from a copy");
        }
    }
    // Ordered by rank and start; a span sent twice keeps its last copy.
    auto key = [](const SpanEvent& e) { return std::tie(e.rank, e.start, e.stage, e.microbatch, e.kind); };
    std::stable_sort(out.begin(), out.end(), [&](const SpanEvent& a, const SpanEvent& b) { return key(a) < key(b); });
    auto last = std::unique(out.rbegin(), out.rend(), [&](const SpanEvent& a, const SpanEvent& b) { return key(a) == key(b); });
    out.erase(out.begin(), last.base());
    return out;
}

void SpanTable::deleteRunRows(int64_t run) {
    m_c.execute("DELETE FROM spans WHERE run = ?1", {run});
    m_c.execute("DELETE FROM span_chunks WHERE run = ?1", {run});
}

} // namespace parallax

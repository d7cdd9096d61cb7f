#include "core/store/MetricTable.h"

#include "core/store/MetricChunk.h"
#include "core/store/StoreTypes.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace parallax {

namespace {

bool earlier(const StepEvent& a, const StepEvent& b) { return a.step < b.step; }

// The steps a schema 1 store wrote, one row each, after `afterStep`.
void readLegacyRows(SqlStatement& legacy, int64_t run, int64_t afterStep, std::vector<StepEvent>& out) {
    SqlStatement::Use use(legacy);
    legacy.bind(1, run);
    legacy.bind(2, afterStep);
    while (legacy.step()) {
        StepEvent e;
        e.step = legacy.int64(0);
        e.t = legacy.realOrNaN(1);
        e.loss = legacy.realOrNaN(2);
        e.lr = legacy.realOrNaN(3);
        e.grad_norm = legacy.realOrNaN(4);
        e.tokens_per_s = legacy.realOrNaN(5);
        e.samples_per_s = legacy.realOrNaN(6);
        e.step_ms = legacy.realOrNaN(7);
        e.step_ms_min = legacy.realOrNaN(8);
        e.step_ms_max = legacy.realOrNaN(9);
        e.slowest_rank = static_cast<int>(legacy.int64(10));
        e.mfu = legacy.realOrNaN(11);
        e.tokens = legacy.int64(12);
        e.peak_mem = legacy.realOrNaN(13);
        out.push_back(e);
    }
}

} // namespace

MetricTable::MetricTable(StoreConnection& connection)
    : m_c(connection),
      m_insertChunk(connection.prepare("INSERT OR REPLACE INTO metric_chunks (run, first_step, last_step, steps, data) "
                                       "VALUES (?1,?2,?3,?4,?5)")) {}

void MetricTable::insertMetrics(int64_t run, const std::vector<StepEvent>& rows) {
    if (rows.empty()) return;
    // Chunks hold steps in order; a batch arrives in order from the supervisor, but sort to be sure.
    const std::vector<StepEvent>* ordered = &rows;
    std::vector<StepEvent> sorted;
    if (!std::is_sorted(rows.begin(), rows.end(), earlier)) {
        sorted = rows;
        std::stable_sort(sorted.begin(), sorted.end(), earlier);
        ordered = &sorted;
    }
    ImplicitTransaction tx(m_c);
    SqlStatement& s = m_insertChunk;
    for (size_t at = 0; at < ordered->size(); at += MetricChunk::kMaxSteps) {
        const size_t count = std::min<size_t>(MetricChunk::kMaxSteps, ordered->size() - at);
        const StepEvent* first = ordered->data() + at;
        const std::string data = MetricChunk::encode(first, count);
        s.bind(1, run);
        s.bind(2, first->step);
        s.bind(3, first[count - 1].step);
        s.bind(4, static_cast<int64_t>(count));
        s.bindBlob(5, data);
        s.run();
    }
    tx.commit();
}

std::vector<StepEvent> MetricTable::metrics(int64_t run, int64_t afterStep) const {
    std::vector<StepEvent> out;
    readLegacyRows(m_c.get("SELECT step, t, loss, lr, grad_norm, tokens_per_s, samples_per_s, step_ms, step_ms_min, "
                           "step_ms_max, slowest_rank, mfu, tokens, peak_mem FROM metrics "
                           "WHERE run = ?1 AND step > ?2 ORDER BY step"),
                   run, afterStep, out);
    const size_t legacyRows = out.size();
    SqlStatement& s = m_c.get("SELECT data FROM metric_chunks WHERE run = ?1 AND last_step > ?2 ORDER BY first_step");
    {
        SqlStatement::Use use(s);
        s.bind(1, run);
        s.bind(2, afterStep);
        try {
            while (s.step()) MetricChunk::decode(s.blob(0), s.blobSize(0), out);
        } catch (const std::runtime_error& e) {
            throw StoreError(m_c.path() + ": " + e.what() + " (run " + std::to_string(run) +
                             "); the store is damaged, restore it from a copy");
        }
    }
    // A chunk starting before afterStep holds earlier steps too; a step sent twice keeps its last copy.
    out.erase(std::remove_if(out.begin() + static_cast<long>(legacyRows), out.end(),
                             [afterStep](const StepEvent& e) { return e.step <= afterStep; }),
              out.end());
    std::stable_sort(out.begin(), out.end(), earlier);
    auto last = std::unique(out.rbegin(), out.rend(), [](const StepEvent& a, const StepEvent& b) { return a.step == b.step; });
    out.erase(out.begin(), last.base());
    return out;
}

void MetricTable::deleteRunRows(int64_t run) {
    m_c.execute("DELETE FROM metrics WHERE run = ?1", {run});
    m_c.execute("DELETE FROM metric_chunks WHERE run = ?1", {run});
}

} // namespace parallax

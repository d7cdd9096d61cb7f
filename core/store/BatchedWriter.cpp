#include "core/store/BatchedWriter.h"

#include "core/store/LogIndexer.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <type_traits>
#include <variant>

namespace parallax {

BatchedWriter::BatchedWriter(RunStore& store, int64_t run, std::chrono::milliseconds interval,
                             size_t maxRows)
    : m_store(store), m_run(run), m_interval(interval), m_maxRows(maxRows > 0 ? maxRows : 1) {}

BatchedWriter::~BatchedWriter() {
    try {
        flush();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "parallax: %zu telemetry rows of run %lld were not written to %s: %s\n",
                     m_pending, static_cast<long long>(m_run), m_store.path().c_str(), e.what());
    }
    m_indexer.reset(); // indexes the last lines, then joins its thread
}

void BatchedWriter::rowAdded() {
    ++m_pending;
    if (!m_oldest) m_oldest = Clock::now();
    if (m_pending >= m_maxRows && !(m_retryAt && Clock::now() < *m_retryAt)) flush();
}

void BatchedWriter::add(const StepEvent& e) {
    m_steps.push_back(e);
    m_pace.add(e);
    m_summary = e;
    rowAdded();
}

void BatchedWriter::add(const SpanEvent& e) {
    m_spans.push_back(e);
    rowAdded();
}

void BatchedWriter::add(const LogRow& row) {
    m_logs.push_back(row);
    rowAdded();
}

void BatchedWriter::add(const RunStartEvent& e) {
    m_runStart = e;
    m_rankHosts = e.hosts;
    if (!m_oldest) m_oldest = Clock::now();
}

void BatchedWriter::add(const RunAlert& a) {
    m_alerts[a.kind] = a;
    if (!m_oldest) m_oldest = Clock::now();
}

void BatchedWriter::add(const HostStatus& h) {
    m_hostStatus[h.host] = h;
    if (!m_oldest) m_oldest = Clock::now();
}

std::string BatchedWriter::hostOfRank(int rank) const {
    if (rank >= 0 && static_cast<size_t>(rank) < m_rankHosts.size()) return m_rankHosts[rank];
    return {};
}

LogRow BatchedWriter::logRow(const LogEvent& e) {
    LogRow row;
    row.t = e.t;
    row.rank = e.rank;
    row.level = LogLevel::fromName(e.level);
    row.stream = "telemetry";
    row.message = e.message;
    return row;
}

void BatchedWriter::add(const LogEvent& e) {
    LogRow row = logRow(e);
    row.host = hostOfRank(e.rank);
    add(row);
}

void BatchedWriter::add(const RunEndEvent& e) {
    LogRow row;
    row.t = e.t;
    row.rank = 0;
    row.host = hostOfRank(0);
    row.level = e.status == runStateName(RunState::Failed) ? LogLevel::Error : LogLevel::Info;
    row.stream = "telemetry";
    row.message = "run ended: " + (e.status.empty() ? std::string("unknown status") : e.status) +
                  " at step " + std::to_string(e.step) + (e.reason.empty() ? "" : ": " + e.reason);
    add(row);
}

void BatchedWriter::add(const TelemetryEvent& e) {
    std::visit([this](const auto& event) { add(event); }, e);
}

std::optional<std::chrono::milliseconds> BatchedWriter::timeUntilDue() const {
    if (!m_oldest) return std::nullopt;
    const Clock::time_point now = Clock::now();
    const auto age = std::chrono::duration_cast<std::chrono::milliseconds>(now - *m_oldest);
    std::chrono::milliseconds due = age >= m_interval ? std::chrono::milliseconds(0) : m_interval - age;
    if (m_retryAt && *m_retryAt > now)
        due = std::max(due, std::chrono::ceil<std::chrono::milliseconds>(*m_retryAt - now));
    return due;
}

bool BatchedWriter::maybeFlush() {
    const auto due = timeUntilDue();
    if (!due || due->count() > 0) return false;
    flush();
    return true;
}

size_t BatchedWriter::pendingRows() const { return m_pending; }

void BatchedWriter::failed() {
    const Clock::time_point now = Clock::now();
    if (!m_failingSince) m_failingSince = now;
    if (m_retryAfter.count() > 0) m_retryAt = now + m_retryAfter;
}

void BatchedWriter::indexSoon() {
    m_wroteLogs = true;
    // A store in memory is seen by this connection only; its lines are indexed by waitIndexed()
    // or the next search.
    if (m_store.logIndexPath().empty()) return;
    try {
        if (!m_indexer) m_indexer = std::make_unique<LogIndexer>(m_store.path(), m_run);
        m_indexer->wake();
    } catch (const std::exception& e) {
        // No thread to be had: the rows are written, and searches index them.
        std::fprintf(stderr, "parallax: cannot start indexing the log lines of run %lld: %s\n",
                     static_cast<long long>(m_run), e.what());
    }
}

void BatchedWriter::waitIndexed() {
    if (!m_wroteLogs) return;
    if (m_indexer && m_indexer->wait()) return;
    m_store.indexLogs(m_run);
}

void BatchedWriter::flush() {
    if (!m_oldest) return;
    try {
        m_store.beginTransaction();
    } catch (...) {
        failed();
        throw;
    }
    const std::optional<int64_t> offset = m_offsetSource ? std::optional<int64_t>(m_offsetSource()) : std::nullopt;
    try {
        if (offset && offset != m_writtenOffset) m_store.setOutputOffset(m_run, *offset);
        if (m_runStart) m_store.setRunStart(m_run, *m_runStart);
        for (const auto& [host, status] : m_hostStatus) m_store.setHostStatus(m_run, status);
        for (const auto& [kind, alert] : m_alerts) m_store.setAlert(m_run, alert);
        m_tableRows.forEach([this](const auto& rows) { m_store.insertEvents(m_run, rows); });
        m_store.insertMetrics(m_run, m_steps);
        m_store.insertSpans(m_run, m_spans);
        m_store.insertLogs(m_run, m_logs);
        if (m_summary) {
            StepEvent summary = *m_summary;
            summary.tokens_per_s = m_pace.tokensPerSecond().value_or(summary.tokens_per_s);
            m_store.updateSummary(m_run, summary);
        }
        m_store.commit();
    } catch (...) {
        try {
            m_store.rollback();
        } catch (const std::exception&) {
            // The original error says more; the rows stay pending either way.
        }
        failed();
        throw;
    }
    m_retryAt.reset();
    m_failingSince.reset();
    if (offset) m_writtenOffset = offset;
    if (!m_logs.empty()) indexSoon();
    m_steps.clear();
    m_spans.clear();
    m_logs.clear();
    m_runStart.reset();
    m_hostStatus.clear();
    m_alerts.clear();
    m_tableRows.clear();
    m_summary.reset();
    m_pending = 0;
    m_oldest.reset();
}

} // namespace parallax

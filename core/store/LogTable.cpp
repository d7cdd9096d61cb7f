#include "core/store/LogTable.h"

#include "core/store/EventTables.h"
#include "core/store/LogIndex.h"
#include "core/store/LogLevel.h"
#include "core/store/SqlText.h"

namespace parallax {

namespace {

constexpr int kLogColumns = 7;
const char* const kInsertLogHead = "INSERT INTO logs (run, t, rank, host, level, stream, message)";

void bindLog(SqlStatement& s, int b, int64_t run, const LogRow& row) {
    s.bind(b + 1, run);
    s.bind(b + 2, row.t);
    s.bind(b + 3, row.rank);
    s.bind(b + 4, row.host);
    s.bind(b + 5, static_cast<int>(row.level));
    s.bind(b + 6, row.stream);
    s.bind(b + 7, row.message);
}

} // namespace

LogTable::LogTable(StoreConnection& connection)
    : m_c(connection), m_insertOne(connection.prepare(kInsertLogHead + sql::valuesList(kLogColumns, 1))),
      m_insertMany(connection.prepare(kInsertLogHead + sql::valuesList(kLogColumns, sql::kRowsPerInsert))) {
    requireFieldsKept<LogEvent>({"rank", "level", "message", "t"}, "a log line (core/store/LogTable.cpp)");
    // A store in memory keeps its index in memory, attached to this connection: attached now,
    // since ATTACH is refused inside the transaction a caller may hold at its first search.
    if (LogIndex::pathFor(m_c.db()).empty()) index();
}

LogTable::~LogTable() = default;

int64_t LogTable::insertLog(int64_t run, const LogRow& row) {
    bindLog(m_insertOne, 0, run, row);
    m_insertOne.run();
    return m_c.lastInsertId();
}

void LogTable::insertLogs(int64_t run, const std::vector<LogRow>& rows) {
    ImplicitTransaction tx(m_c);
    size_t i = 0;
    for (; i + sql::kRowsPerInsert <= rows.size(); i += sql::kRowsPerInsert) {
        for (int r = 0; r < sql::kRowsPerInsert; ++r) bindLog(m_insertMany, r * kLogColumns, run, rows[i + r]);
        m_insertMany.run();
    }
    for (; i < rows.size(); ++i) {
        bindLog(m_insertOne, 0, run, rows[i]);
        m_insertOne.run();
    }
    tx.commit();
}

void LogTable::deleteRunRows(int64_t run) { m_c.execute("DELETE FROM logs WHERE run = ?1", {run}); }

LogIndex& LogTable::index() const {
    if (!m_index) m_index = std::make_unique<LogIndex>(m_c.db(), m_c.openUri(), m_c.openFlags(), m_c.busyTimeoutMs());
    return *m_index;
}

std::string LogTable::indexPath() const { return LogIndex::pathFor(m_c.db()); }

void LogTable::setBusyTimeout(int milliseconds) {
    if (m_index) m_index->setBusyTimeout(milliseconds);
}

} // namespace parallax

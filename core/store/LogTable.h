#pragma once

#include "core/store/StoreConnection.h"
#include "core/store/StoreTypes.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace parallax {

class LogIndex;

// A run's log lines and their full-text index. Not a generated table (EventTables.h): its rows are
// lines of the ranks' output as much as log events, with the host and stream an event lacks, levels
// kept as numbers (so that a partial index finds warnings and errors among millions of lines), and
// an id per line that the full-text index (LogIndex, a file of its own) and follow mode key on. A
// LogEvent becomes a line through BatchedWriter::logRow; a field it gains must get a column here,
// which the constructor checks.
class LogTable {
public:
    // Throws std::logic_error when LogEvent has a field no column of a line holds.
    explicit LogTable(StoreConnection& connection);
    ~LogTable();

    int64_t insertLog(int64_t run, const LogRow& row);
    void insertLogs(int64_t run, const std::vector<LogRow>& rows);
    void deleteRunRows(int64_t run);

    // The searches' connection, opened on first use: mutable, since a const search first brings
    // the index up to date.
    LogIndex& index() const;
    std::string indexPath() const;
    void setBusyTimeout(int milliseconds);

private:
    StoreConnection& m_c;
    SqlStatement m_insertOne, m_insertMany; // a line, and sql::kRowsPerInsert lines
    mutable std::unique_ptr<LogIndex> m_index;
};

} // namespace parallax

#pragma once

#include "core/store/LogTable.h"
#include "core/store/SqlStatement.h"
#include "core/store/StoreConnection.h"
#include "core/store/StoreTypes.h"

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// Searches of a run's log lines (LogQuery: ranks, levels, full-text, pages) and their counts, from
// one statement builder so that a count always matches the rows (see RunStore::logs).
class LogQueries {
public:
    LogQueries(StoreConnection& connection, const LogTable& table) : m_c(connection), m_table(table) {}

    std::vector<LogRow> logs(int64_t run, const LogQuery& q) const;
    int64_t logCount(int64_t run, const LogQuery& q) const;

private:
    struct Select {
        std::string sql;
        std::vector<SqlStatement::Value> values; // in the order of the SQL's '?'
        bool fullText = false;
        bool empty = false; // nothing can match (no lines in the id range)
    };
    Select build(int64_t run, const LogQuery& q, bool count) const;
    // The FROM and WHERE of a text search, after indexing what the index lacks of the run.
    void buildFullText(int64_t run, const LogQuery& q, const std::string& match, const std::string& what,
                       bool coveringCount, Select& sel) const;
    template <typename RowFn>
    void run(const Select& sel, const LogQuery& q, RowFn&& onRow) const;

    StoreConnection& m_c;
    const LogTable& m_table;
};

} // namespace parallax

#pragma once

#include "core/store/EventTables.h"
#include "core/store/StoreConnection.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace parallax {

// The rows of the events kept in tables generated from their fields (EventTables.h): device
// samples, comms, checkpoints, each rank's steps, unit and collective times. Written in
// statements of many rows, read in key order, deleted with their run; none of it names an event.
class TelemetryTables {
public:
    explicit TelemetryTables(StoreConnection& connection) : m_c(connection) {}

    // Writes `rows` rows, binding row i from parameter base + 1 on; one transaction unless the
    // caller holds one.
    void insert(const EventTableSpec& spec, size_t rows,
                const std::function<void(SqlStatement&, int base, size_t i)>& bindRow);
    // Rows of events of any kind that has a generated table (others throw std::logic_error).
    void insert(int64_t run, const std::vector<TelemetryEvent>& rows);
    // The run's rows whose first key field is above `after`, in key order, the columns `leftOut`
    // not read (EventTableSpec::selectSql); none from a read-only store that predates the table.
    void select(const EventTableSpec& spec, int64_t run, const SqlStatement::Value& after,
                const std::function<void(const SqlStatement&)>& onRow,
                const std::vector<std::string>& leftOut = {}) const;
    // The run's rows whose first key field lies in [from, until), in key order.
    void selectRange(const EventTableSpec& spec, int64_t run, const SqlStatement::Value& from,
                     const SqlStatement::Value& until, const std::function<void(const SqlStatement&)>& onRow) const;
    // The run's largest first key field, as a number; none when it has no rows.
    std::optional<double> lastKey(const EventTableSpec& spec, int64_t run) const;
    // ... and its smallest.
    std::optional<double> firstKey(const EventTableSpec& spec, int64_t run) const;
    // Deletes the run's rows whose first key field lies in [from, until), but those whose column
    // `keep` holds one of `kept` (a JSON array of numbers); returns how many went.
    int64_t deleteRange(const EventTableSpec& spec, int64_t run, const SqlStatement::Value& from,
                        const SqlStatement::Value& until, const std::string& keep, const std::string& kept);
    // How far the run's rows of `event` have been thinned (TelemetryThinning.h); none: not yet.
    std::optional<double> thinnedUntil(int64_t run, const std::string& event) const;
    void setThinnedUntil(int64_t run, const std::string& event, double until);
    void deleteRunRows(int64_t run);

private:
    // Whether the table is there to read: a store opened for writing has every generated table
    // (ensureEventTables), a read-only one may predate an event.
    bool readable(const EventTableSpec& spec) const;
    // The one key a query of the run's rows (?1) answers; none when it has no rows.
    std::optional<double> keyOf(const EventTableSpec& spec, int64_t run, const std::string& sql) const;
    // The table's insert of one row and of sql::kRowsPerInsert rows, prepared on first use (a
    // read-only store may predate the table).
    std::pair<SqlStatement, SqlStatement>& inserts(const EventTableSpec& spec);

    StoreConnection& m_c;
    std::unordered_map<const EventTableSpec*, std::pair<SqlStatement, SqlStatement>> m_inserts;
};

} // namespace parallax

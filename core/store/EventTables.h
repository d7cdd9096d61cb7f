#pragma once

#include "core/store/SqlStatement.h"
#include "core/telemetry/Events.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

struct sqlite3;

namespace parallax {

// The store's side of an event kept in a table generated from its fields (E::table(), see
// core/telemetry/EventFields.h): the table's columns, its SQL, and an event as a row and back. A new
// event of that kind needs nothing here nor in the schema: the store creates its table when it is
// opened for writing, and adds a column for a field the event gains later.
struct EventTableSpec {
    struct Column {
        std::string name;
        const char* type; // INTEGER, REAL or TEXT
    };
    std::string event;             // its "ev" name, for messages
    std::string table;
    std::vector<std::string> key;  // the fields that identify a row within a run
    std::vector<Column> columns;   // one per field, in the event's order

    // (run, every column), primary key (run, key...), WITHOUT ROWID: rows are read by run and key.
    std::string createSql() const;
    // ?1 the run, then the fields in order; a row with the key of an earlier one replaces it.
    std::string insertSql() const;
    // The columns in order, for ?1 the run, of the rows whose first key field is above ?2, in key order.
    std::string selectSql() const;
};

// The generated tables of every event in TelemetryEvent that has one.
const std::vector<const EventTableSpec*>& eventTableSpecs();

// Creates the generated tables a store lacks and adds the columns of fields an event gained, in one
// transaction that is taken only when something is missing. For a store open for writing.
void ensureEventTables(sqlite3* db, const std::string& path);

template <class E>
const EventTableSpec& eventTableSpec() {
    static_assert(hasEventTable<E>, "the event has no generated table: give it `static EventTable table()`");
    static const EventTableSpec spec = [] {
        const EventTable t = E::table();
        EventTableSpec s;
        s.event = std::string(E::kName);
        s.table = std::string(t.name);
        for (const EventField<E>& f : E::fields()) {
            if (f.isList())
                throw std::logic_error(s.event + "." + std::string(f.name) +
                                       ": a generated table holds only numbers and strings, not lists");
            if (f.name == "run") throw std::logic_error(s.event + ": \"run\" is the store's column of the run id");
            s.columns.push_back({std::string(f.name), f.f64 ? "REAL" : f.str ? "TEXT" : "INTEGER"});
        }
        for (std::string_view k : t.key) {
            bool known = false;
            for (const EventTableSpec::Column& c : s.columns) known = known || c.name == k;
            if (!known) throw std::logic_error(s.event + ": key \"" + std::string(k) + "\" is none of its fields");
            s.key.emplace_back(k);
        }
        if (s.key.empty()) throw std::logic_error(s.event + ": a generated table needs a key");
        return s;
    }();
    return spec;
}

// Binds ?1 to the run and ?2... to the event's fields, as EventTableSpec::insertSql() expects. The
// statement reads the event's strings: run it before the event goes.
template <class E>
void bindEventRow(SqlStatement& s, int64_t run, const E& e) {
    s.bind(1, run);
    int i = 2;
    for (const EventField<E>& f : E::fields()) {
        if (f.i32) s.bind(i, static_cast<int64_t>(e.*f.i32));
        else if (f.i64) s.bind(i, e.*f.i64);
        else if (f.f64) s.bind(i, e.*f.f64); // NaN is stored as NULL
        else s.bind(i, e.*f.str);
        ++i;
    }
}

// The event of the current row of a statement made from EventTableSpec::selectSql().
template <class E>
E readEventRow(const SqlStatement& s) {
    E e;
    int c = 0;
    for (const EventField<E>& f : E::fields()) {
        if (f.i32) e.*f.i32 = static_cast<int>(s.int64(c));
        else if (f.i64) e.*f.i64 = s.int64(c);
        else if (f.f64) e.*f.f64 = s.realOrNaN(c);
        else e.*f.str = s.text(c);
        ++c;
    }
    return e;
}

} // namespace parallax

#pragma once

#include "core/store/JsonLists.h"
#include "core/store/SqlStatement.h"
#include "core/telemetry/Events.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
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
        const char* type; // INTEGER, REAL or TEXT (strings, and lists as JSON arrays)
        bool key = false; // one of the table's key fields
    };
    std::string event;             // its "ev" name, for messages
    std::string table;
    std::vector<std::string> key;  // the fields that identify a row within a run
    std::vector<Column> columns;   // one per field, in the event's order

    // (run, every column), primary key (run, key...), WITHOUT ROWID: rows are read by run and key.
    std::string createSql() const;
    // The run, then the fields in order, for each of `rows` rows; a row with the key of an earlier
    // one replaces it.
    std::string insertSql(int rows = 1) const;
    // The columns in order, for ?1 the run, of the rows whose first key field is above ?2, in key order;
    // the columns named in `leftOut` are not read but NULL in their place (std::logic_error for a
    // name that is none of the columns, or a key).
    std::string selectSql(const std::vector<std::string>& leftOut = {}) const;
    // The same for the rows whose first key field lies in [?2, ?3).
    std::string rangeSql() const;
    // For ?1 the run: its largest first key field (one row; none when the run has no rows).
    std::string lastKeySql() const;
    // ... and its smallest.
    std::string firstKeySql() const;
    // Deletes the run's rows whose first key field lies in [?2, ?3), except those whose column
    // `keep` holds one of the values of the JSON array ?4.
    std::string deleteRangeSql(const std::string& keep) const;
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
            if (f.isList() && !t.listsAsJson)
                throw std::logic_error(s.event + "." + std::string(f.name) +
                                       ": a generated table holds only numbers and strings, not lists, unless "
                                       "table() keeps them as JSON text (EventTable::listsAsJson)");
            if (f.name == "run") throw std::logic_error(s.event + ": \"run\" is the store's column of the run id");
            s.columns.push_back({std::string(f.name), f.f64 ? "REAL" : f.i32 || f.i64 ? "INTEGER" : "TEXT"});
        }
        const std::vector<EventField<E>>& fields = E::fields();
        for (std::string_view k : t.key) {
            const auto f = std::find_if(fields.begin(), fields.end(), [&](const EventField<E>& x) { return x.name == k; });
            if (f == fields.end()) throw std::logic_error(s.event + ": key \"" + std::string(k) + "\" is none of its fields");
            if (f->isList()) throw std::logic_error(s.event + ": key \"" + std::string(k) + "\" is a list");
            s.columns[static_cast<size_t>(f - fields.begin())].key = true;
            s.key.emplace_back(k);
        }
        if (s.key.empty()) throw std::logic_error(s.event + ": a generated table needs a key");
        return s;
    }();
    return spec;
}

// Binds the run and the event's fields as EventTableSpec::insertSql() expects, from parameter
// `base` + 1 on (the row's place in a statement of several rows). The statement reads the event's
// strings: run it before the event goes. SQLite has no NaN: a NaN is stored as NULL, and as 0 in a
// key column, which cannot be NULL.
template <class E>
void bindEventRow(SqlStatement& s, int64_t run, const E& e, int base = 0) {
    const std::vector<EventTableSpec::Column>& columns = eventTableSpec<E>().columns;
    s.bind(base + 1, run);
    int i = base + 2;
    size_t c = 0;
    for (const EventField<E>& f : E::fields()) {
        if (f.i32) s.bind(i, static_cast<int64_t>(e.*f.i32));
        else if (f.i64) s.bind(i, e.*f.i64);
        else if (f.f64) s.bind(i, columns[c].key && std::isnan(e.*f.f64) ? 0.0 : e.*f.f64);
        else if (f.str) s.bind(i, e.*f.str);
        else if (f.strs) s.bindCopy(i, json_lists::text(e.*f.strs));
        else if (f.f64s) s.bindCopy(i, json_lists::text(e.*f.f64s));
        else s.bindCopy(i, json_lists::text(e.*f.i64s));
        ++i;
        ++c;
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
        else if (f.str) e.*f.str = s.text(c);
        else if (f.strs) json_lists::read(s.text(c), e.*f.strs);
        else if (f.f64s) json_lists::read(s.text(c), e.*f.f64s);
        else json_lists::read(s.text(c), e.*f.i64s);
        ++c;
    }
    return e;
}

// For an event kept in a shape of its own rather than a generated table: throws std::logic_error
// naming a field of E that is not among `kept` (the fields that shape holds), so that a field the
// event gains is never dropped without a word.
template <class E>
void requireFieldsKept(std::initializer_list<std::string_view> kept, const char* where) {
    for (const EventField<E>& f : E::fields()) {
        if (std::find(kept.begin(), kept.end(), f.name) == kept.end())
            throw std::logic_error(std::string(E::kName) + "." + std::string(f.name) + " is not kept in " + where +
                                   ": give it a place there");
    }
}

} // namespace parallax

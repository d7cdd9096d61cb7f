#include "core/store/EventTables.h"

#include "core/store/SqlText.h"
#include "core/store/StoreTypes.h"

#include <sqlite3.h>

#include <set>
#include <type_traits>
#include <variant>

namespace parallax {

namespace {

// Names come from the events' declarations, never from input; quoted all the same.
std::string quoted(const std::string& name) { return "\"" + name + "\""; }

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ", ") + quoted(n);
    return out;
}

template <size_t I = 0>
void collectSpecs(std::vector<const EventTableSpec*>& out) {
    if constexpr (I < std::variant_size_v<TelemetryEvent>) {
        using E = std::variant_alternative_t<I, TelemetryEvent>;
        if constexpr (hasEventTable<E>) out.push_back(&eventTableSpec<E>());
        collectSpecs<I + 1>(out);
    }
}

void check(sqlite3* db, int rc, const std::string& path, const std::string& what) {
    if (rc != SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
        throw StoreError("store " + path + ": " + what + ": " + sqlite3_errmsg(db));
}

void exec(sqlite3* db, const std::string& sql, const std::string& path, const std::string& what) {
    char* err = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
        const std::string msg = err ? err : sqlite3_errmsg(db);
        sqlite3_free(err);
        throw StoreError("store " + path + ": " + what + ": " + msg);
    }
}

// The columns of `table`; empty when there is no such table.
std::set<std::string> columnsOf(sqlite3* db, const std::string& table, const std::string& path) {
    sqlite3_stmt* st = nullptr;
    check(db, sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info(?1)", -1, &st, nullptr), path,
          "cannot read the columns of " + table);
    std::set<std::string> out;
    sqlite3_bind_text(st, 1, table.c_str(), static_cast<int>(table.size()), SQLITE_TRANSIENT);
    int rc = SQLITE_ROW;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        out.insert(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
    sqlite3_finalize(st);
    check(db, rc, path, "cannot read the columns of " + table);
    return out;
}

// The SQL that brings the generated tables up to date; empty when they are.
std::string missingParts(sqlite3* db, const std::string& path) {
    std::string sql;
    for (const EventTableSpec* spec : eventTableSpecs()) {
        const std::set<std::string> have = columnsOf(db, spec->table, path);
        if (have.empty()) {
            sql += spec->createSql() + ";";
            continue;
        }
        for (const EventTableSpec::Column& c : spec->columns)
            if (!have.count(c.name))
                sql += "ALTER TABLE " + quoted(spec->table) + " ADD COLUMN " + quoted(c.name) + " " + c.type + ";";
    }
    return sql;
}

} // namespace

std::string EventTableSpec::createSql() const {
    std::string sql = "CREATE TABLE IF NOT EXISTS " + quoted(table) + " (run INTEGER NOT NULL";
    for (const Column& c : columns) sql += ", " + quoted(c.name) + " " + c.type;
    return sql + ", PRIMARY KEY (run, " + joined(key) + ")) WITHOUT ROWID";
}

std::string EventTableSpec::insertSql(int rows) const {
    std::string names;
    for (const Column& c : columns) names += ", " + quoted(c.name);
    return "INSERT OR REPLACE INTO " + quoted(table) + " (run" + names + ")" +
           sql::valuesList(static_cast<int>(columns.size()) + 1, rows);
}

std::string EventTableSpec::selectSql(const std::vector<std::string>& leftOut) const {
    for (const std::string& name : leftOut) {
        const auto c = std::find_if(columns.begin(), columns.end(), [&](const Column& x) { return x.name == name; });
        if (c == columns.end() || c->key)
            throw std::logic_error(event + ": \"" + name + "\" is not a field that a read can leave out");
    }
    std::string names;
    for (const Column& c : columns) {
        const bool out = std::find(leftOut.begin(), leftOut.end(), c.name) != leftOut.end();
        names += (names.empty() ? "" : ", ") + (out ? std::string("NULL") : quoted(c.name));
    }
    return "SELECT " + names + " FROM " + quoted(table) + " WHERE run = ?1 AND " + quoted(key.front()) +
           " > ?2 ORDER BY " + joined(key);
}

std::string EventTableSpec::rangeSql() const {
    std::vector<std::string> names;
    for (const Column& c : columns) names.push_back(c.name);
    const std::string first = quoted(key.front());
    return "SELECT " + joined(names) + " FROM " + quoted(table) + " WHERE run = ?1 AND " + first + " >= ?2 AND " +
           first + " < ?3 ORDER BY " + joined(key);
}

std::string EventTableSpec::lastKeySql() const {
    // The primary key (run, key...) answers it from its last entry for the run.
    const std::string first = quoted(key.front());
    return "SELECT " + first + " FROM " + quoted(table) + " WHERE run = ?1 ORDER BY " + first + " DESC LIMIT 1";
}

std::string EventTableSpec::firstKeySql() const {
    const std::string first = quoted(key.front());
    return "SELECT " + first + " FROM " + quoted(table) + " WHERE run = ?1 ORDER BY " + first + " LIMIT 1";
}

std::string EventTableSpec::deleteRangeSql(const std::string& keep) const {
    const std::string first = quoted(key.front());
    return "DELETE FROM " + quoted(table) + " WHERE run = ?1 AND " + first + " >= ?2 AND " + first + " < ?3 AND " +
           quoted(keep) + " NOT IN (SELECT value FROM json_each(?4))";
}

const std::vector<const EventTableSpec*>& eventTableSpecs() {
    static const std::vector<const EventTableSpec*> specs = [] {
        std::vector<const EventTableSpec*> out;
        collectSpecs(out);
        return out;
    }();
    return specs;
}

void ensureEventTables(sqlite3* db, const std::string& path) {
    if (missingParts(db, path).empty()) return;
    exec(db, "BEGIN IMMEDIATE", path, "cannot lock the store to add the tables of new events");
    try {
        // Another process may have added them while this one waited for the lock.
        const std::string sql = missingParts(db, path);
        if (!sql.empty()) exec(db, sql, path, "cannot add the tables of new events");
        exec(db, "COMMIT", path, "cannot commit the tables of new events");
    } catch (...) {
        sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
}

} // namespace parallax

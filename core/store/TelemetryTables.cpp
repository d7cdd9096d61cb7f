#include "core/store/TelemetryTables.h"

#include "core/store/SqlText.h"

#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <variant>

namespace parallax {

std::pair<SqlStatement, SqlStatement>& TelemetryTables::inserts(const EventTableSpec& spec) {
    auto it = m_inserts.find(&spec);
    if (it != m_inserts.end()) return it->second;
    return m_inserts.emplace(&spec, std::make_pair(m_c.prepare(spec.insertSql(1)),
                                                   m_c.prepare(spec.insertSql(sql::kRowsPerInsert))))
        .first->second;
}

void TelemetryTables::insert(const EventTableSpec& spec, size_t rows,
                             const std::function<void(SqlStatement&, int base, size_t i)>& bindRow) {
    if (rows == 0) return;
    auto& [one, many] = inserts(spec);
    // One statement is all or nothing by itself.
    std::optional<ImplicitTransaction> tx;
    if (rows > 1) tx.emplace(m_c);
    const int columns = static_cast<int>(spec.columns.size()) + 1;
    size_t i = 0;
    for (; i + sql::kRowsPerInsert <= rows; i += sql::kRowsPerInsert) {
        for (int r = 0; r < sql::kRowsPerInsert; ++r) bindRow(many, r * columns, i + static_cast<size_t>(r));
        many.run();
    }
    for (; i < rows; ++i) {
        bindRow(one, 0, i);
        one.run();
    }
    if (tx) tx->commit();
}

void TelemetryTables::insert(int64_t run, const std::vector<TelemetryEvent>& rows) {
    if (rows.empty()) return;
    ImplicitTransaction tx(m_c);
    for (const TelemetryEvent& row : rows) {
        std::visit(
            [&](const auto& e) {
                using E = std::decay_t<decltype(e)>;
                if constexpr (hasEventTable<E>) {
                    SqlStatement& s = inserts(eventTableSpec<E>()).first;
                    bindEventRow(s, run, e);
                    s.run();
                } else {
                    throw std::logic_error(std::string("insertEvents: ") + std::string(E::kName) +
                                           " has a table of its own, not a generated one");
                }
            },
            row);
    }
    tx.commit();
}

bool TelemetryTables::readable(const EventTableSpec& spec) const {
    if (!m_c.openedReadOnly()) return true;
    SqlStatement& exists = m_c.get("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1");
    SqlStatement::Use use(exists);
    exists.bind(1, spec.table);
    return exists.step();
}

void TelemetryTables::select(const EventTableSpec& spec, int64_t run, const SqlStatement::Value& after,
                             const std::function<void(const SqlStatement&)>& onRow,
                             const std::vector<std::string>& leftOut) const {
    if (!readable(spec)) return;
    SqlStatement& s = m_c.get(spec.selectSql(leftOut));
    SqlStatement::Use use(s);
    s.bindAll({run, after});
    while (s.step()) onRow(s);
}

void TelemetryTables::selectRange(const EventTableSpec& spec, int64_t run, const SqlStatement::Value& from,
                                  const SqlStatement::Value& until,
                                  const std::function<void(const SqlStatement&)>& onRow) const {
    if (!readable(spec)) return;
    SqlStatement& s = m_c.get(spec.rangeSql());
    SqlStatement::Use use(s);
    s.bindAll({run, from, until});
    while (s.step()) onRow(s);
}

std::optional<double> TelemetryTables::keyOf(const EventTableSpec& spec, int64_t run, const std::string& sql) const {
    if (!readable(spec)) return std::nullopt;
    SqlStatement& s = m_c.get(sql);
    SqlStatement::Use use(s);
    s.bind(1, run);
    if (!s.step() || s.isNull(0)) return std::nullopt;
    return s.real(0);
}

std::optional<double> TelemetryTables::lastKey(const EventTableSpec& spec, int64_t run) const {
    return keyOf(spec, run, spec.lastKeySql());
}

std::optional<double> TelemetryTables::firstKey(const EventTableSpec& spec, int64_t run) const {
    return keyOf(spec, run, spec.firstKeySql());
}

int64_t TelemetryTables::deleteRange(const EventTableSpec& spec, int64_t run, const SqlStatement::Value& from,
                                     const SqlStatement::Value& until, const std::string& keep,
                                     const std::string& kept) {
    SqlStatement& s = m_c.get(spec.deleteRangeSql(keep));
    SqlStatement::Use use(s);
    s.bindAll({run, from, until});
    s.bind(4, kept);
    s.run();
    return m_c.changes();
}

std::optional<double> TelemetryTables::thinnedUntil(int64_t run, const std::string& event) const {
    SqlStatement& s = m_c.get("SELECT until FROM telemetry_thinned WHERE run = ?1 AND event = ?2");
    SqlStatement::Use use(s);
    s.bind(1, run);
    s.bind(2, event);
    if (!s.step()) return std::nullopt;
    return s.real(0);
}

void TelemetryTables::setThinnedUntil(int64_t run, const std::string& event, double until) {
    m_c.execute("INSERT OR REPLACE INTO telemetry_thinned (run, event, until) VALUES (?1, ?2, ?3)", {run, event, until});
}

void TelemetryTables::deleteRunRows(int64_t run) {
    for (const EventTableSpec* spec : eventTableSpecs()) m_c.execute("DELETE FROM \"" + spec->table + "\" WHERE run = ?1", {run});
    m_c.execute("DELETE FROM telemetry_thinned WHERE run = ?1", {run});
}

} // namespace parallax

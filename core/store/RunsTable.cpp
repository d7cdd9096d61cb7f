#include "core/store/RunsTable.h"

#include "core/store/JsonLists.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string_view>

namespace parallax {

namespace {

using nlohmann::json;

std::vector<std::string> distinctInOrder(const std::vector<std::string>& items) {
    std::vector<std::string> out;
    for (const auto& s : items) {
        if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
    }
    return out;
}

// An event as a JSON object with a key per field (E::fields(), Events.h), as a run keeps its
// run_start: a field the event gains is kept with no change here.
template <class E>
json eventJson(const E& e) {
    json j = json::object();
    for (const EventField<E>& f : E::fields()) {
        json& v = j[std::string(f.name)];
        if (f.i32) v = e.*f.i32;
        else if (f.i64) v = e.*f.i64;
        else if (f.f64) v = e.*f.f64;
        else if (f.str) v = e.*f.str;
        else if (f.strs) v = e.*f.strs;
        else if (f.f64s) v = e.*f.f64s;
        else v = e.*f.i64s;
    }
    return j;
}

template <typename T>
void readField(const json& j, std::string_view key, T& out) {
    auto it = j.find(std::string(key));
    if (it == j.end() || it->is_null()) return;
    try {
        out = it->get<T>();
    } catch (const json::exception&) {
        // A field of another type (edited by hand?) keeps its default.
    }
}

// The event of eventJson(); a field missing (an older row), null or of another type keeps its
// default.
template <class E>
E eventFromJson(const json& j) {
    E e;
    for (const EventField<E>& f : E::fields()) {
        if (f.i32) readField(j, f.name, e.*f.i32);
        else if (f.i64) readField(j, f.name, e.*f.i64);
        else if (f.f64) readField(j, f.name, e.*f.f64);
        else if (f.str) readField(j, f.name, e.*f.str);
        else if (f.strs) readField(j, f.name, e.*f.strs);
        else if (f.f64s) readField(j, f.name, e.*f.f64s);
        else readField(j, f.name, e.*f.i64s);
    }
    return e;
}

} // namespace

RunsTable::RunsTable(StoreConnection& connection)
    : m_c(connection),
      m_updateSummary(connection.prepare("UPDATE runs SET last_step = ?2, last_loss = ?3, tokens_per_s = ?4, "
                                         "mfu = ?5 WHERE id = ?1")) {}

void RunsTable::setColumn(int64_t id, const char* column, const SqlStatement::Value& value, const char* what) {
    m_c.execute(std::string("UPDATE runs SET ") + column + " = ?2 WHERE id = ?1", {id, value});
    m_c.requireChanged(id, what);
}

int64_t RunsTable::createRun(const NewRun& run) {
    if (run.name.find_first_not_of(" \t\r\n") == std::string::npos) {
        throw StoreError("createRun: the run's name is empty; set `name` in the spec");
    }
    if (run.parent_run) {
        SqlStatement& parent = m_c.get("SELECT 1 FROM runs WHERE id = ?1");
        SqlStatement::Use use(parent);
        parent.bind(1, *run.parent_run);
        if (!parent.step())
            throw StoreError("createRun: parent run " + std::to_string(*run.parent_run) + " does not exist in " +
                             m_c.path());
    }
    SqlStatement& s = m_c.get(
        "INSERT INTO runs (name, spec_toml, state, created_at, model_kind, layout, steps_total, "
        "world_size, parent_run, tags, output_offset) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,0)");
    const std::string& state = runStateName(RunState::Queued);
    const std::string tags = json_lists::text(run.tags);
    s.bind(1, run.name);
    s.bind(2, run.spec_toml);
    s.bind(3, state);
    s.bind(4, nowSeconds());
    s.bind(5, run.model_kind);
    s.bind(6, run.layout);
    s.bind(7, run.steps_total);
    s.bind(8, run.world_size);
    s.bind(9, run.parent_run);
    s.bind(10, tags);
    s.run();
    return m_c.lastInsertId();
}

void RunsTable::setRunDir(int64_t id, const std::string& dir) { setColumn(id, "run_dir", dir, "setRunDir"); }

void RunsTable::relocateRunDir(int64_t id, const std::string& from, const std::string& to) {
    ImplicitTransaction tx(m_c);
    setRunDir(id, to);
    m_c.execute("UPDATE checkpoints SET path = ?3 || substr(path, length(?2) + 1) "
                "WHERE run = ?1 AND (path = ?2 OR substr(path, 1, length(?2) + 1) = ?2 || '/')",
                {id, from, to});
    tx.commit();
}

void RunsTable::setLaunchCommand(int64_t id, const std::string& command) {
    setColumn(id, "launch_command", command, "setLaunchCommand");
}

void RunsTable::setOutputOffset(int64_t id, int64_t offset) {
    setColumn(id, "output_offset", offset, "setOutputOffset");
}

std::optional<int64_t> RunsTable::outputOffset(int64_t id) const {
    SqlStatement& s = m_c.get("SELECT output_offset FROM runs WHERE id = ?1");
    SqlStatement::Use use(s);
    s.bind(1, id);
    if (!s.step() || s.isNull(0)) return std::nullopt;
    return s.int64(0);
}

void RunsTable::setRunStart(int64_t id, const RunStartEvent& start) {
    const std::string hosts = json_lists::text(distinctInOrder(start.hosts));
    const std::string event = eventJson(start).dump(-1, ' ', false, json::error_handler_t::replace);
    m_c.execute("UPDATE runs SET hosts = ?2, world_size = ?3, params = ?4, run_start = ?5 WHERE id = ?1",
                {id, hosts, int64_t{start.world}, start.params, event});
    m_c.requireChanged(id, "setRunStart");
}

std::optional<RunStartEvent> RunsTable::runStart(int64_t id) const {
    SqlStatement& s = m_c.get("SELECT run_start FROM runs WHERE id = ?1");
    SqlStatement::Use use(s);
    s.bind(1, id);
    if (!s.step() || s.isNull(0)) return std::nullopt;
    const json j = json::parse(s.text(0), nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) return std::nullopt;
    return eventFromJson<RunStartEvent>(j);
}

void RunsTable::updateSummary(int64_t id, const StepEvent& lastStep) {
    SqlStatement& s = m_updateSummary;
    s.bind(1, id);
    s.bind(2, lastStep.step);
    s.bind(3, lastStep.loss); // NaN is stored as NULL and read back as NaN (see RunQueries)
    s.bind(4, lastStep.tokens_per_s);
    // MFU is 0 when the device's peak is unknown (CPU runs): that is "no figure", not 0 %.
    if (lastStep.mfu > 0) s.bind(5, lastStep.mfu);
    else s.bindNull(5);
    s.run();
    m_c.requireChanged(id, "updateSummary");
}

void RunsTable::finishRun(int64_t id, RunState state, std::optional<int> exitCode, const std::string& reason,
                          double endedAt) {
    if (!isTerminal(state)) {
        throw StoreError("finishRun: state '" + runStateName(state) +
                         "' is not a final state; use succeeded, failed, stopped or lost");
    }
    SqlStatement& s = m_c.get("UPDATE runs SET state = ?2, exit_code = ?3, exit_reason = ?4, ended_at = ?5 WHERE id = ?1");
    s.bind(1, id);
    s.bind(2, runStateName(state));
    if (exitCode) s.bind(3, *exitCode);
    else s.bindNull(3);
    s.bind(4, reason);
    s.bind(5, endedAt > 0 ? endedAt : nowSeconds());
    s.run();
    m_c.requireChanged(id, "finishRun");
}

void RunsTable::setStartedAt(int64_t id, double startedAt) { setColumn(id, "started_at", startedAt, "setStartedAt"); }

void RunsTable::deleteRunRows(int64_t id) {
    m_c.execute("UPDATE runs SET parent_run = NULL WHERE parent_run = ?1", {id});
    m_c.execute("DELETE FROM runs WHERE id = ?1", {id});
    m_c.requireChanged(id, "deleteRun");
}

} // namespace parallax

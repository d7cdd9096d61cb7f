#include "core/store/RunStore.h"

#include "core/store/FtsQuery.h"
#include "core/store/LogIndex.h"
#include "core/store/LogLevel.h"
#include "core/store/MetricChunk.h"
#include "core/store/SpanChunk.h"
#include "core/store/Schema.h"
#include "core/store/SqliteConnection.h"
#include "core/store/SqlStatement.h"
#include "core/store/SqlText.h"
#include "core/store/StoreHealth.h"

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <filesystem>
#include <iterator>
#include <sstream>
#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <thread>
#include <variant>

namespace parallax {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Long enough that a reader or another supervisor that holds the lock for a burst of writes is
// waited for; short enough that a stuck process is reported instead of hanging forever.
constexpr int kBusyTimeoutMs = 15000;
// Dynamic statements (log and run queries) are cached by SQL text; their shapes are few (one per
// number of selected ranks and combination of filters), so a small cache hits almost always.
constexpr size_t kMaxCachedQueries = 64;

double nowSeconds() {
    using namespace std::chrono;
    return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string runColumns() {
    return "id, name, state, created_at, started_at, ended_at, hosts, world_size, exit_code, "
           "exit_reason, supervisor_pid, supervisor_host, parent_run, tags, notes, run_dir, "
           "launch_command, model_kind, layout, params, steps_total, last_step, last_loss, "
           "tokens_per_s, mfu, spec_toml";
}

std::vector<std::string> parseStringList(const std::string& text) {
    std::vector<std::string> out;
    if (text.empty() || text == "[]") return out; // most runs: no tags
    const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_array()) {
        for (const auto& v : j) {
            if (v.is_string()) out.push_back(v.get<std::string>());
        }
    } else {
        // Not written by Parallax (edited by hand?): keep the text rather than lose it.
        out.push_back(text);
    }
    return out;
}

// Text from a person or a worker may not be valid UTF-8; JSON must be, so bad bytes become U+FFFD
// instead of failing the write.
std::string jsonText(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string toJsonList(const std::vector<std::string>& items) { return jsonText(json(items)); }

RunRecord readRun(const SqlStatement& s) {
    RunRecord r;
    r.id = s.int64(0);
    r.name = s.text(1);
    r.state = s.text(2);
    r.created_at = s.real(3);
    r.started_at = s.real(4);
    r.ended_at = s.real(5);
    r.hosts = parseStringList(s.text(6));
    r.world_size = static_cast<int>(s.int64(7));
    if (!s.isNull(8)) r.exit_code = static_cast<int>(s.int64(8));
    r.exit_reason = s.text(9);
    r.supervisor_pid = s.int64(10);
    r.supervisor_host = s.text(11);
    r.parent_run = s.optInt64(12);
    r.tags = parseStringList(s.text(13));
    r.notes = s.text(14);
    r.run_dir = s.text(15);
    r.launch_command = s.text(16);
    r.model_kind = s.text(17);
    r.layout = s.text(18);
    r.params = s.int64(19);
    r.steps_total = s.int64(20);
    r.last_step = s.int64(21);
    r.last_loss = s.optReal(22);
    // A recorded step with a NULL loss had a NaN loss (SQLite cannot store NaN).
    if (!r.last_loss && r.last_step >= 0) r.last_loss = std::numeric_limits<double>::quiet_NaN();
    r.tokens_per_s = s.optReal(23);
    r.mfu = s.optReal(24);
    r.spec_toml = s.text(25);
    return r;
}

json runStartToJson(const RunStartEvent& e) {
    return json{{"world", e.world},
                {"dp", e.dp},
                {"tp", e.tp},
                {"pp", e.pp},
                {"zero", e.zero},
                {"schedule", e.schedule},
                {"params", e.params},
                {"flops_per_token", e.flops_per_token},
                {"peak_flops", e.peak_flops},
                {"device", e.device},
                {"hosts", e.hosts},
                {"devices", e.devices},
                {"clock_offsets", e.clock_offsets},
                {"pids", e.pids},
                {"slurm_job", e.slurm_job},
                {"slurm_nodes", e.slurm_nodes},
                {"start_step", e.start_step},
                {"t", e.t}};
}

template <typename T>
void readField(const json& j, const char* key, T& out) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return;
    try {
        out = it->get<T>();
    } catch (const json::exception&) {
        // A field of another type (edited by hand?) keeps its default.
    }
}

RunStartEvent runStartFromJson(const json& j) {
    RunStartEvent e;
    readField(j, "world", e.world);
    readField(j, "dp", e.dp);
    readField(j, "tp", e.tp);
    readField(j, "pp", e.pp);
    readField(j, "zero", e.zero);
    readField(j, "schedule", e.schedule);
    readField(j, "params", e.params);
    readField(j, "flops_per_token", e.flops_per_token);
    readField(j, "peak_flops", e.peak_flops);
    readField(j, "device", e.device);
    readField(j, "hosts", e.hosts);
    readField(j, "devices", e.devices);
    readField(j, "clock_offsets", e.clock_offsets);
    readField(j, "pids", e.pids);
    readField(j, "slurm_job", e.slurm_job);
    readField(j, "slurm_nodes", e.slurm_nodes);
    readField(j, "start_step", e.start_step);
    readField(j, "t", e.t);
    return e;
}

std::vector<std::string> distinctInOrder(const std::vector<std::string>& items) {
    std::vector<std::string> out;
    for (const auto& s : items) {
        if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
    }
    return out;
}

// LIKE pattern matching `text` anywhere, with LIKE's wildcards in `text` taken literally.
std::string likePattern(const std::string& text) {
    std::string p = "%";
    for (char c : text) {
        if (c == '%' || c == '_' || c == '\\') p += '\\';
        p += c;
    }
    p += '%';
    return p;
}

std::string placeholders(size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s += i ? ",?" : "?";
    return s;
}

bool isAllDigits(const std::string& s) {
    return !s.empty() && s.size() <= 18 &&
           std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::string trimmed(const std::string& s) {
    const auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return {};
    const auto e = s.find_last_not_of(" \t\r\n");
    return s.substr(b, e - b + 1);
}

using sql::kRowsPerInsert;
using sql::valuesList;

constexpr int kLogColumns = 7;

const char* const kInsertLogHead = "INSERT INTO logs (run, t, rank, host, level, stream, message)";

void bindLog(SqlStatement& s, int b, int64_t run, const LogRow& row) {
    s.bind(b + 1, run);
    s.bind(b + 2, row.t);
    s.bind(b + 3, row.rank);
    s.bind(b + 4, row.host);
    s.bind(b + 5, LogLevel::fromName(row.level));
    s.bind(b + 6, row.stream);
    s.bind(b + 7, row.message);
}

// Inserts `rows` with the many-row statement while a full group is left, then one by one.
template <typename Row, typename BindFn>
void insertRows(SqlStatement& one, SqlStatement& many, int columns, int64_t run,
                const std::vector<Row>& rows, BindFn bind) {
    size_t i = 0;
    for (; i + kRowsPerInsert <= rows.size(); i += kRowsPerInsert) {
        for (int r = 0; r < kRowsPerInsert; ++r) bind(many, r * columns, run, rows[i + r]);
        many.run();
    }
    for (; i < rows.size(); ++i) {
        bind(one, 0, run, rows[i]);
        one.run();
    }
}

} // namespace

// Statements prepared once per connection; the insert statements are the hot path of the
// supervisor and are members, everything else is cached by its SQL text.
struct RunStore::Statements {
    Statements(sqlite3* db, const std::string& path) : db(db), path(path) {
        auto prep = [&](const std::string& sql) { return SqlStatement(db, sql, path); };
        begin = prep("BEGIN IMMEDIATE");
        commit = prep("COMMIT");
        rollback = prep("ROLLBACK");
        dataVersion = prep("PRAGMA data_version");
        userVersion = prep("PRAGMA user_version");
        auto pair = [&](const char* head, int columns, SqlStatement& one, SqlStatement& many) {
            one = prep(head + valuesList(columns, 1));
            many = prep(head + valuesList(columns, kRowsPerInsert));
        };
        pair(kInsertLogHead, kLogColumns, insertLog, insertLogs);
        insertSpanChunk = prep(
            "INSERT OR REPLACE INTO span_chunks (run, step, rank, first_start, spans, data) "
            "VALUES (?1,?2,?3,?4,?5,?6)");
        insertMetricChunk = prep(
            "INSERT OR REPLACE INTO metric_chunks (run, first_step, last_step, steps, data) "
            "VALUES (?1,?2,?3,?4,?5)");
        updateSummary = prep(
            "UPDATE runs SET last_step = ?2, last_loss = ?3, tokens_per_s = ?4, mfu = ?5 "
            "WHERE id = ?1");
    }

    SqlStatement& get(const std::string& sql) {
        auto it = cache.find(sql);
        if (it != cache.end()) return it->second;
        if (cache.size() >= kMaxCachedQueries) cache.clear();
        return cache.emplace(sql, SqlStatement(db, sql, path)).first->second;
    }

    sqlite3* db;
    std::string path;
    SqlStatement begin, commit, rollback, dataVersion, userVersion;
    SqlStatement insertLog, insertLogs;
    // Per generated table, its insert of one row and of kRowsPerInsert rows, prepared on first use
    // (a read-only store may predate the table).
    std::unordered_map<const EventTableSpec*, std::pair<SqlStatement, SqlStatement>> tableInserts;
    std::pair<SqlStatement, SqlStatement>& inserts(const EventTableSpec& spec) {
        auto it = tableInserts.find(&spec);
        if (it != tableInserts.end()) return it->second;
        return tableInserts.emplace(&spec, std::make_pair(SqlStatement(db, spec.insertSql(1), path),
                                                          SqlStatement(db, spec.insertSql(kRowsPerInsert), path)))
            .first->second;
    }
    SqlStatement updateSummary;
    SqlStatement insertMetricChunk, insertSpanChunk;
    std::unordered_map<std::string, SqlStatement> cache;
};

// A transaction around a write unless the caller already holds one, so that a write of several
// statements is all or nothing either way.
class RunStore::ImplicitTransaction {
public:
    explicit ImplicitTransaction(RunStore& store)
        : m_store(store), m_own(sqlite3_get_autocommit(store.m_db) != 0) {
        if (m_own) m_store.beginTransaction();
    }
    ~ImplicitTransaction() {
        if (m_own && !m_done) {
            try {
                m_store.rollback();
            } catch (const StoreError&) {
                // The error that brought us here is the one to report.
            }
        }
    }
    void commit() {
        if (m_own) m_store.commit();
        m_done = true;
    }

private:
    RunStore& m_store;
    bool m_own;
    bool m_done = false;
};

namespace {

// `path` as the path of a file: URI, with the characters that URIs reserve escaped.
std::string uriPath(const std::string& path) {
    std::string out;
    for (const char c : path) {
        if (c == '%' || c == '?' || c == '#') {
            static const char* hex = "0123456789ABCDEF";
            out += '%';
            out += hex[(static_cast<unsigned char>(c) >> 4) & 0xF];
            out += hex[static_cast<unsigned char>(c) & 0xF];
        } else {
            out += c;
        }
    }
    return out;
}

// A store that exists already: an empty file is not one (SQLite would make it one silently, over
// whatever it was meant to be), and a store readable by others is made the owner's alone, as a
// new one is (a run's spec may name secrets).
void refuseEmptyFileAndTightenMode(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
    // Its creator may be writing its first page at this moment.
    for (int i = 0; st.st_size == 0 && i < 5; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (::stat(path.c_str(), &st) != 0) return;
    }
    if (st.st_size == 0)
        throw StoreError("store " + path + " is an empty file, not a store (a store is never empty); if it is left "
                         "from a store whose creation was cut short, delete it and run again; else pass another "
                         "--store path");
    if ((st.st_mode & 077) == 0 || st.st_uid != ::geteuid()) return;
    for (const std::string& file : {path, path + "-wal", path + "-shm"})
        if (::chmod(file.c_str(), 0600) != 0 && errno != ENOENT)
            std::fprintf(stderr, "parallax: cannot make %s readable by its owner only: %s\n", file.c_str(),
                         std::strerror(errno));
}

// Whether `path` starts as an SQLite file does: a damaged store, rather than a file of another kind.
bool hasSqliteHeader(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    char head[16] = {};
    in.read(head, sizeof head);
    return in.gcount() == sizeof head && std::string(head, sizeof head) == std::string("SQLite format 3\0", 16);
}

} // namespace

RunStore::RunStore(const std::string& path) : m_path(path) {
    // SQLite's memory statistics take one process-wide mutex on every allocation, which makes
    // threads that each use their own connection (the rows' writer and the log indexer) take
    // turns instead of running at once. Only possible before SQLite is first used; later (another
    // library used it first) this fails harmlessly.
    static const bool noMemoryStatistics = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) == SQLITE_OK;
    (void)noMemoryStatistics;
    if (path.empty()) throw StoreError("the store path is empty; pass --store PATH");
    const bool isFile = path != ":memory:" && path.rfind("file:", 0) != 0;
    if (isFile) {
        std::error_code ec;
        if (fs::is_directory(path, ec)) {
            throw StoreError("store " + path +
                             " is a folder; pass the path of a database file, e.g. " + path +
                             "/parallax.db");
        }
        refuseEmptyFileAndTightenMode(path);
        const fs::path parent = fs::path(path).parent_path();
        if (!parent.empty() && !fs::exists(parent, ec)) {
            fs::create_directories(parent, ec);
            if (ec) {
                throw StoreError("cannot create the folder " + parent.string() + " for store " +
                                 path + ": " + ec.message() + "; pass another --store path");
            }
        }
    }

    const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX |
                      (isFile ? 0 : SQLITE_OPEN_URI);
    m_openFlags = flags;
    m_busyTimeoutMs = kBusyTimeoutMs;
    m_openUri = path;
    m_db = openSqlite(path, flags, kBusyTimeoutMs, "store",
                      "check that the file and its folder are readable and writable");
    auto finishOpening = [this] {
        try {
            migrate();
            // A store in memory keeps its index in memory, attached to this connection: attached
            // now, since ATTACH is refused inside the transaction a caller may hold at its first
            // search.
            if (LogIndex::pathFor(m_db).empty()) logIndex();
            m_stmts = std::make_unique<Statements>(m_db, m_path);
        } catch (...) {
            m_stmts.reset();
            m_logIndex.reset();
            sqlite3_close_v2(m_db);
            m_db = nullptr;
            throw;
        }
    };
    if (!isFile) {
        finishOpening();
        return;
    }
    const bool readOnly = sqlite3_db_readonly(m_db, "main") == 1;
    try {
        finishOpening();
    } catch (const StoreError&) {
        if (!readOnly) throw;
        // A store on a read-only disk (an archive, a share mounted read-only) whose WAL index is
        // not there cannot be read in WAL mode, which must create it. Nobody can write such a
        // file, so it is read as it is: complete, since its WAL is gone with its last writer.
        m_openUri = "file:" + uriPath(fs::absolute(path).string()) + "?immutable=1";
        m_openFlags = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI;
        m_db = openSqlite(m_openUri, m_openFlags, kBusyTimeoutMs, "store", "check that the file is readable");
        finishOpening();
    }
}

RunStore::~RunStore() {
    m_logIndex.reset();
    m_stmts.reset();
    if (m_db) {
        // Keeps the query planner's statistics current. The analysis limit bounds the work on
        // tables of millions of rows, so closing stays quick.
        sqlite3_exec(m_db, "PRAGMA analysis_limit = 400; PRAGMA optimize", nullptr, nullptr, nullptr);
        sqlite3_close_v2(m_db);
    }
}

namespace {

void execOrThrow(sqlite3* db, const std::string& path, const char* sql, const std::string& what) {
    char* err = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
        const std::string msg = err ? err : sqlite3_errmsg(db);
        sqlite3_free(err);
        throw StoreError("store " + path + ": " + what + ": " + msg);
    }
}

// Runs a one-row, one-column query; throws StoreError with `what`.
int64_t queryInt(sqlite3* db, const std::string& path, const char* sql, const std::string& what,
                 int* errorCode = nullptr) {
    sqlite3_stmt* st = nullptr;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, nullptr);
    int64_t value = 0;
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) value = sqlite3_column_int64(st, 0);
    }
    const std::string msg = sqlite3_errmsg(db);
    const int code = sqlite3_errcode(db);
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW) {
        if (errorCode) *errorCode = code;
        throw StoreError("store " + path + ": " + what + ": " + msg);
    }
    return value;
}

} // namespace

void RunStore::migrate() {
    // Identify the file before writing anything to it: a file of another program must be left
    // exactly as it was.
    int64_t objects = 0;
    try {
        objects = queryInt(m_db, m_path, "SELECT count(*) FROM sqlite_master", "cannot read it");
    } catch (const StoreError&) {
        const int code = sqlite3_errcode(m_db) & 0xff;
        if ((code == SQLITE_NOTADB || code == SQLITE_CORRUPT) && hasSqliteHeader(m_path))
            throwIfDamaged(sqlite3_extended_errcode(m_db), m_path, "cannot read its schema", sqlite3_errmsg(m_db));
        if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT) {
            throw StoreError(m_path + " is not a Parallax store: it is not a SQLite database (" +
                             sqlite3_errmsg(m_db) +
                             "); pass another --store path, or move the file away");
        }
        throw;
    }
    const int64_t appId = queryInt(m_db, m_path, "PRAGMA application_id", "cannot read it");
    const int64_t version = queryInt(m_db, m_path, "PRAGMA user_version", "cannot read it");
    const bool fresh = objects == 0 && appId == 0;
    if (!fresh && appId != kStoreApplicationId) {
        throw StoreError(m_path +
                         " is a SQLite database of another program, not a Parallax store "
                         "(application_id " +
                         std::to_string(appId) + ", " + std::to_string(objects) +
                         " schema objects); pass another --store path");
    }
    if (version > kSchemaVersion) {
        throw StoreError(m_path + " was written by a newer Parallax (schema " +
                         std::to_string(version) + ", this build reads up to " +
                         std::to_string(kSchemaVersion) +
                         "); upgrade Parallax or use another --store path");
    }

    if (sqlite3_db_readonly(m_db, "main") == 1) {
        // Read-only: nothing can be changed, nor needs to be, as long as the schema is current.
        if (version < kSchemaVersion) {
            throw StoreError("store " + m_path + " is read-only and was written by an earlier version (schema " +
                             std::to_string(version) + ", this build reads " + std::to_string(kSchemaVersion) +
                             "); open it once where it can be written, to upgrade it");
        }
        execOrThrow(m_db, m_path, "PRAGMA temp_store = MEMORY; PRAGMA cache_size = -32768;",
                    "cannot configure the connection");
        return;
    }
    // WAL lets the console read while a supervisor writes. It needs shared memory between the
    // processes, which network file systems do not give.
    const std::string mode = selectWal(m_db, m_busyTimeoutMs, "store " + m_path + ": cannot select WAL mode");
    if (mode != "wal" && mode != "memory") {
        throw StoreError("store " + m_path + ": cannot use WAL mode (journal mode stays '" + mode +
                         "'); network file systems do not support it; put the store on a local "
                         "disk with --store PATH");
    }
    // NORMAL in WAL mode: a power loss can drop the last transactions, never corrupt the file.
    execOrThrow(m_db, m_path,
                "PRAGMA synchronous = NORMAL;"
                "PRAGMA temp_store = MEMORY;"
                "PRAGMA cache_size = -32768;"          // KiB: 32 MiB per connection at most
                "PRAGMA journal_size_limit = 67108864;" // truncate the WAL to 64 MiB after bursts
                "PRAGMA wal_autocheckpoint = 4000;",    // pages (16 MiB): fewer, larger checkpoints
                "cannot configure the connection");

    applyMigrations(m_db, m_path, storeMigrations());
    ensureEventTables(m_db, m_path);
}

void RunStore::requireIntact() const {
    const std::vector<std::string> problems = quickCheck(m_db, m_path);
    if (problems.empty()) return;
    std::string said;
    for (const std::string& p : problems) said += (said.empty() ? "" : "; ") + p;
    throw StoreDamaged("store " + m_path + " is damaged (PRAGMA quick_check: " + said + "): " +
                       damagedStoreHint(m_path));
}

int RunStore::schemaVersion() const {
    SqlStatement& s = m_stmts->userVersion;
    SqlStatement::Use use(s);
    return s.step() ? static_cast<int>(s.int64(0)) : 0;
}

int64_t RunStore::dataVersion() const {
    SqlStatement& s = m_stmts->dataVersion;
    SqlStatement::Use use(s);
    return s.step() ? s.int64(0) : 0;
}

void RunStore::setBusyTimeout(int milliseconds) {
    m_busyTimeoutMs = milliseconds;
    sqlite3_busy_timeout(m_db, milliseconds);
    if (m_logIndex) m_logIndex->setBusyTimeout(milliseconds);
}

std::string RunStore::defaultPath() {
    std::string base;
    const char* xdg = std::getenv("XDG_DATA_HOME");
    if (xdg && *xdg == '/') {
        base = xdg;
    } else {
        const char* home = std::getenv("HOME");
        std::string h = home && *home ? home : "";
        if (h.empty()) {
            if (const passwd* pw = getpwuid(getuid())) h = pw->pw_dir ? pw->pw_dir : "";
        }
        if (h.empty()) h = ".";
        base = h + "/.local/share";
    }
    return base + "/parallax/parallax.db";
}

// --- runs

namespace {

// Throws "run N does not exist" when an UPDATE/DELETE by id touched nothing.
void requireChanged(sqlite3* db, int64_t id, const std::string& path, const char* what) {
    if (sqlite3_changes(db) == 0) {
        throw StoreError("store " + path + ": " + what + ": run " + std::to_string(id) +
                         " does not exist");
    }
}

} // namespace

int64_t RunStore::createRun(const NewRun& run) {
    if (trimmed(run.name).empty()) {
        throw StoreError("createRun: the run's name is empty; set `name` in the spec");
    }
    if (run.parent_run && !this->run(*run.parent_run)) {
        throw StoreError("createRun: parent run " + std::to_string(*run.parent_run) +
                         " does not exist in " + m_path);
    }
    SqlStatement& s = m_stmts->get(
        "INSERT INTO runs (name, spec_toml, state, created_at, model_kind, layout, steps_total, "
        "world_size, parent_run, tags, output_offset) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,0)");
    const std::string state = RunState::Queued;
    const std::string tags = toJsonList(run.tags);
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
    return sqlite3_last_insert_rowid(m_db);
}

void RunStore::setRunDir(int64_t id, const std::string& dir) {
    SqlStatement& s = m_stmts->get("UPDATE runs SET run_dir = ?2 WHERE id = ?1");
    s.bind(1, id);
    s.bind(2, dir);
    s.run();
    requireChanged(m_db, id, m_path, "setRunDir");
}

void RunStore::relocateRunDir(int64_t id, const std::string& from, const std::string& to) {
    ImplicitTransaction tx(*this);
    setRunDir(id, to);
    SqlStatement& s = m_stmts->get(
        "UPDATE checkpoints SET path = ?3 || substr(path, length(?2) + 1) "
        "WHERE run = ?1 AND (path = ?2 OR substr(path, 1, length(?2) + 1) = ?2 || '/')");
    s.bind(1, id);
    s.bind(2, from);
    s.bind(3, to);
    s.run();
    tx.commit();
}

void RunStore::insertEventRows(const EventTableSpec& spec, size_t rows,
                               const std::function<void(SqlStatement&, int, size_t)>& bindRow) {
    if (rows == 0) return;
    auto& [one, many] = m_stmts->inserts(spec);
    // One statement is all or nothing by itself.
    std::optional<ImplicitTransaction> tx;
    if (rows > 1) tx.emplace(*this);
    const int columns = static_cast<int>(spec.columns.size()) + 1;
    size_t i = 0;
    for (; i + kRowsPerInsert <= rows; i += kRowsPerInsert) {
        for (int r = 0; r < kRowsPerInsert; ++r) bindRow(many, r * columns, i + static_cast<size_t>(r));
        many.run();
    }
    for (; i < rows; ++i) {
        bindRow(one, 0, i);
        one.run();
    }
    if (tx) tx->commit();
}

void RunStore::insertEvents(int64_t run, const std::vector<TelemetryEvent>& rows) {
    if (rows.empty()) return;
    ImplicitTransaction tx(*this);
    for (const TelemetryEvent& row : rows) {
        std::visit(
            [&](const auto& e) {
                using E = std::decay_t<decltype(e)>;
                if constexpr (hasEventTable<E>) {
                    SqlStatement& s = m_stmts->inserts(eventTableSpec<E>()).first;
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

void RunStore::selectEventRows(const EventTableSpec& spec, int64_t run, const SqlStatement::Value& after,
                               const std::function<void(const SqlStatement&)>& onRow) const {
    // A store opened for writing has every generated table (ensureEventTables); a read-only one
    // may predate an event.
    if (m_openFlags & SQLITE_OPEN_READONLY) {
        SqlStatement& exists = m_stmts->get("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1");
        SqlStatement::Use use(exists);
        exists.bind(1, spec.table);
        if (!exists.step()) return;
    }
    SqlStatement& s = m_stmts->get(spec.selectSql());
    SqlStatement::Use use(s);
    s.bindAll({run, after});
    while (s.step()) onRow(s);
}

void RunStore::setAlert(int64_t run, const RunAlert& a) {
    SqlStatement& s = m_stmts->get(
        "INSERT INTO alerts (run, kind, message, since, t, active, ranks, step) VALUES (?1,?2,?3,?4,?5,?6,?7,?8) "
        "ON CONFLICT (run, kind) DO UPDATE SET message = excluded.message, t = excluded.t, "
        "active = excluded.active, ranks = excluded.ranks, "
        "step = CASE WHEN alerts.active = 1 AND excluded.active = 1 THEN alerts.step ELSE excluded.step END, since = CASE WHEN alerts.active = 1 AND excluded.active = 1 THEN alerts.since "
        "ELSE excluded.since END");
    const double now = a.t > 0 ? a.t : nowSeconds();
    s.bind(1, run);
    s.bind(2, a.kind);
    s.bind(3, a.message);
    s.bind(4, a.since > 0 ? a.since : now);
    s.bind(5, now);
    s.bind(6, static_cast<int64_t>(a.active ? 1 : 0));
    std::string ranks;
    for (int r : a.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
    s.bind(7, ranks);
    if (a.step >= 0)
        s.bind(8, a.step);
    else
        s.bindNull(8);
    s.run();
}

std::vector<RunAlert> RunStore::alerts(int64_t run) const {
    SqlStatement& s =
        m_stmts->get("SELECT kind, message, since, t, active, ranks, step FROM alerts WHERE run = ?1 ORDER BY kind");
    SqlStatement::Use use(s);
    s.bind(1, run);
    std::vector<RunAlert> out;
    while (s.step()) {
        RunAlert a;
        a.kind = s.text(0);
        a.message = s.text(1);
        a.since = s.real(2);
        a.t = s.real(3);
        a.active = s.int64(4) != 0;
        std::istringstream ranks(s.text(5));
        for (std::string r; std::getline(ranks, r, ',');)
            if (!r.empty()) a.ranks.push_back(std::stoi(r));
        a.step = s.isNull(6) ? -1 : s.int64(6);
        out.push_back(a);
    }
    return out;
}

void RunStore::setHostStatus(int64_t run, const HostStatus& h) {
    SqlStatement& s = m_stmts->get(
        "INSERT OR REPLACE INTO host_status (run, host, state, last_answer, latency_ms, detail, t) "
        "VALUES (?1,?2,?3,?4,?5,?6,?7)");
    s.bind(1, run);
    s.bind(2, h.host);
    s.bind(3, h.state);
    if (h.last_answer > 0) s.bind(4, h.last_answer);
    else s.bindNull(4);
    if (h.latency_ms >= 0) s.bind(5, h.latency_ms);
    else s.bindNull(5);
    s.bind(6, h.detail);
    s.bind(7, h.t > 0 ? h.t : nowSeconds());
    s.run();
}

std::vector<HostStatus> RunStore::hostStatuses(int64_t run) const {
    SqlStatement& s = m_stmts->get(
        "SELECT host, state, last_answer, latency_ms, detail, t FROM host_status WHERE run = ?1 ORDER BY host");
    SqlStatement::Use use(s);
    s.bind(1, run);
    std::vector<HostStatus> out;
    while (s.step()) {
        HostStatus h;
        h.host = s.text(0);
        h.state = s.text(1);
        h.last_answer = s.isNull(2) ? 0 : s.real(2);
        h.latency_ms = s.isNull(3) ? -1 : s.real(3);
        h.detail = s.text(4);
        h.t = s.real(5);
        out.push_back(h);
    }
    return out;
}

void RunStore::addPendingCleanup(const PendingCleanup& c) {
    SqlStatement& s = m_stmts->get(
        "INSERT OR REPLACE INTO pending_cleanups (run, host, run_dir, since, attempts, last_error) "
        "VALUES (?1,?2,?3,?4,?5,?6)");
    s.bind(1, c.run);
    s.bind(2, c.host);
    s.bind(3, c.run_dir);
    s.bind(4, c.since > 0 ? c.since : nowSeconds());
    s.bind(5, c.attempts);
    s.bind(6, c.last_error);
    s.run();
}

void RunStore::removePendingCleanup(int64_t run, const std::string& host) {
    SqlStatement& s = m_stmts->get("DELETE FROM pending_cleanups WHERE run = ?1 AND host = ?2");
    s.bind(1, run);
    s.bind(2, host);
    s.run();
}

void RunStore::notePendingCleanupAttempt(int64_t run, const std::string& host, const std::string& error) {
    SqlStatement& s = m_stmts->get(
        "UPDATE pending_cleanups SET attempts = attempts + 1, last_error = ?3 WHERE run = ?1 AND host = ?2");
    s.bind(1, run);
    s.bind(2, host);
    s.bind(3, error);
    s.run();
}

std::vector<PendingCleanup> RunStore::pendingCleanups() const {
    SqlStatement& s = m_stmts->get(
        "SELECT run, host, run_dir, since, attempts, last_error FROM pending_cleanups ORDER BY since, run, host");
    SqlStatement::Use use(s);
    std::vector<PendingCleanup> out;
    while (s.step()) {
        PendingCleanup c;
        c.run = s.int64(0);
        c.host = s.text(1);
        c.run_dir = s.text(2);
        c.since = s.real(3);
        c.attempts = s.int64(4);
        c.last_error = s.text(5);
        out.push_back(c);
    }
    return out;
}

std::string RunStore::storeId() const { return storeInfo("id").value_or(std::string()); }

std::optional<std::string> RunStore::storeInfo(const std::string& key) const {
    SqlStatement& s = m_stmts->get("SELECT value FROM store_info WHERE key = ?1");
    SqlStatement::Use use(s);
    s.bind(1, key);
    if (!s.step()) return std::nullopt;
    return s.text(0);
}

void RunStore::setStoreInfo(const std::string& key, const std::string& value) {
    SqlStatement& s = m_stmts->get("INSERT OR REPLACE INTO store_info (key, value) VALUES (?1, ?2)");
    s.bind(1, key);
    s.bind(2, value);
    s.run();
}

void RunStore::setOutputOffset(int64_t id, int64_t offset) {
    SqlStatement& s = m_stmts->get("UPDATE runs SET output_offset = ?2 WHERE id = ?1");
    s.bind(1, id);
    s.bind(2, offset);
    s.run();
    requireChanged(m_db, id, m_path, "setOutputOffset");
}

std::optional<int64_t> RunStore::outputOffset(int64_t id) const {
    SqlStatement& s = m_stmts->get("SELECT output_offset FROM runs WHERE id = ?1");
    SqlStatement::Use use(s);
    s.bind(1, id);
    if (!s.step() || s.isNull(0)) return std::nullopt;
    return s.int64(0);
}

void RunStore::setLaunchCommand(int64_t id, const std::string& command) {
    SqlStatement& s = m_stmts->get("UPDATE runs SET launch_command = ?2 WHERE id = ?1");
    s.bind(1, id);
    s.bind(2, command);
    s.run();
    requireChanged(m_db, id, m_path, "setLaunchCommand");
}

void RunStore::markRunning(int64_t id, int64_t supervisorPid, const std::string& supervisorHost) {
    // A run marked lost by a console that could not see its supervisor comes back to life here;
    // a run that ended does not (resuming creates a new run).
    SqlStatement& s = m_stmts->get(
        "UPDATE runs SET state = 'running', supervisor_pid = ?2, supervisor_host = ?3, "
        "started_at = CASE WHEN started_at > 0 THEN started_at ELSE ?4 END, ended_at = 0 "
        "WHERE id = ?1 AND state IN ('queued', 'running', 'lost')");
    s.bind(1, id);
    s.bind(2, supervisorPid);
    s.bind(3, supervisorHost);
    s.bind(4, nowSeconds());
    s.run();
    if (sqlite3_changes(m_db) == 0) {
        const auto r = run(id);
        if (!r) requireChanged(m_db, id, m_path, "markRunning");
        throw StoreError("markRunning: run " + std::to_string(id) + " already ended (" + r->state +
                         "); start a new run to train again");
    }
}

void RunStore::setRunStart(int64_t id, const RunStartEvent& start) {
    SqlStatement& s = m_stmts->get(
        "UPDATE runs SET hosts = ?2, world_size = ?3, params = ?4, run_start = ?5 WHERE id = ?1");
    const std::string hosts = toJsonList(distinctInOrder(start.hosts));
    const std::string event = jsonText(runStartToJson(start));
    s.bind(1, id);
    s.bind(2, hosts);
    s.bind(3, start.world);
    s.bind(4, start.params);
    s.bind(5, event);
    s.run();
    requireChanged(m_db, id, m_path, "setRunStart");
}

std::optional<RunStartEvent> RunStore::runStart(int64_t id) const {
    SqlStatement& s = m_stmts->get("SELECT run_start FROM runs WHERE id = ?1");
    SqlStatement::Use use(s);
    s.bind(1, id);
    if (!s.step() || s.isNull(0)) return std::nullopt;
    const json j = json::parse(s.text(0), nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) return std::nullopt;
    return runStartFromJson(j);
}

void RunStore::updateSummary(int64_t id, const StepEvent& lastStep) {
    SqlStatement& s = m_stmts->updateSummary;
    s.bind(1, id);
    s.bind(2, lastStep.step);
    s.bind(3, lastStep.loss); // NaN is stored as NULL and read back as NaN (see readRun)
    s.bind(4, lastStep.tokens_per_s);
    // MFU is 0 when the device's peak is unknown (CPU runs): that is "no figure", not 0 %.
    if (lastStep.mfu > 0) s.bind(5, lastStep.mfu);
    else s.bindNull(5);
    s.run();
    requireChanged(m_db, id, m_path, "updateSummary");
}

void RunStore::finishRun(int64_t id, const std::string& state, std::optional<int> exitCode,
                         const std::string& reason, double endedAt) {
    if (!RunState::isTerminal(state)) {
        throw StoreError("finishRun: state '" + state +
                         "' is not a final state; use succeeded, failed, stopped or lost");
    }
    SqlStatement& s = m_stmts->get(
        "UPDATE runs SET state = ?2, exit_code = ?3, exit_reason = ?4, ended_at = ?5 WHERE id = ?1");
    s.bind(1, id);
    s.bind(2, state);
    if (exitCode) s.bind(3, *exitCode);
    else s.bindNull(3);
    s.bind(4, reason);
    s.bind(5, endedAt > 0 ? endedAt : nowSeconds());
    s.run();
    requireChanged(m_db, id, m_path, "finishRun");
}

void RunStore::setStartedAt(int64_t id, double startedAt) {
    SqlStatement& s = m_stmts->get("UPDATE runs SET started_at = ?2 WHERE id = ?1");
    s.bind(1, id);
    s.bind(2, startedAt);
    s.run();
    requireChanged(m_db, id, m_path, "setStartedAt");
}

void RunStore::setTags(int64_t id, const std::vector<std::string>& tags) {
    SqlStatement& s = m_stmts->get("UPDATE runs SET tags = ?2 WHERE id = ?1");
    const std::string text = toJsonList(tags);
    s.bind(1, id);
    s.bind(2, text);
    s.run();
    requireChanged(m_db, id, m_path, "setTags");
}

void RunStore::setNotes(int64_t id, const std::string& notes) {
    SqlStatement& s = m_stmts->get("UPDATE runs SET notes = ?2 WHERE id = ?1");
    s.bind(1, id);
    s.bind(2, notes);
    s.run();
    requireChanged(m_db, id, m_path, "setNotes");
}

void RunStore::deleteRun(int64_t id) {
    // The lines leave the full-text index first; the index stays locked until the rows are gone
    // (see LogIndex::forgetRun).
    logIndex().forgetRun(id, [&] { deleteRunRows(id); });
}

void RunStore::deleteRunRows(int64_t id) {
    // One transaction, so that a reader sees the run whole or not at all.
    ImplicitTransaction tx(*this);
    for (const char* sql : {"DELETE FROM metrics WHERE run = ?1", "DELETE FROM metric_chunks WHERE run = ?1",
                            "DELETE FROM spans WHERE run = ?1", "DELETE FROM span_chunks WHERE run = ?1",
                            "DELETE FROM host_status WHERE run = ?1",
                            "DELETE FROM alerts WHERE run = ?1",
                            "DELETE FROM slurm_jobs WHERE run = ?1",
                            "DELETE FROM logs WHERE run = ?1",
                            "UPDATE runs SET parent_run = NULL WHERE parent_run = ?1"}) {
        SqlStatement& s = m_stmts->get(sql);
        s.bind(1, id);
        s.run();
    }
    for (const EventTableSpec* spec : eventTableSpecs()) {
        SqlStatement& rows = m_stmts->get("DELETE FROM \"" + spec->table + "\" WHERE run = ?1");
        rows.bind(1, id);
        rows.run();
    }
    SqlStatement& s = m_stmts->get("DELETE FROM runs WHERE id = ?1");
    s.bind(1, id);
    s.run();
    requireChanged(m_db, id, m_path, "deleteRun");
    tx.commit();
}

std::vector<int64_t> RunStore::lineage(int64_t id) const {
    std::vector<int64_t> up{id};
    for (std::optional<RunRecord> r = run(id); r && r->parent_run;) {
        const int64_t parent = *r->parent_run;
        if (std::find(up.begin(), up.end(), parent) != up.end()) break; // never, but not forever
        up.push_back(parent);
        r = run(parent);
    }
    std::vector<int64_t> out(up.rbegin(), up.rend());
    SqlStatement& s = m_stmts->get("SELECT id FROM runs WHERE parent_run = ?1 ORDER BY id DESC LIMIT 1");
    for (int64_t at = id;;) {
        std::optional<int64_t> child;
        {
            SqlStatement::Use use(s);
            s.bind(1, at);
            if (s.step()) child = s.int64(0);
        }
        if (!child || std::find(out.begin(), out.end(), *child) != out.end()) break;
        out.push_back(*child);
        at = *child;
    }
    return out;
}

std::optional<RunRecord> RunStore::run(int64_t id) const {
    SqlStatement& s = m_stmts->get("SELECT " + runColumns() + " FROM runs WHERE id = ?1");
    SqlStatement::Use use(s);
    s.bind(1, id);
    if (!s.step()) return std::nullopt;
    return readRun(s);
}

std::optional<RunRecord> RunStore::latestRunNamed(const std::string& name) const {
    SqlStatement& s = m_stmts->get("SELECT " + runColumns() +
                                   " FROM runs WHERE name = ?1 ORDER BY id DESC LIMIT 1");
    SqlStatement::Use use(s);
    s.bind(1, name);
    if (!s.step()) return std::nullopt;
    return readRun(s);
}

std::optional<RunRecord> RunStore::findRun(const std::string& idOrName) const {
    const std::string key = trimmed(idOrName);
    if (key.empty()) return std::nullopt;
    if (isAllDigits(key)) {
        if (auto r = run(std::stoll(key))) return r;
        // A run may be named "42" too.
    }
    return latestRunNamed(key);
}

std::vector<RunRecord> RunStore::listRuns(const RunFilter& filter) const {
    // order_by is looked up, never pasted: only these expressions can reach the SQL text. A '?'
    // in one is the current time (the duration of a run still going).
    static const std::vector<std::pair<std::string, std::string>> orderColumns = {
        {"id", "id"},
        {"name", "name COLLATE NOCASE"},
        {"state", "state"},
        {"created_at", "created_at"},
        {"started_at", "NULLIF(started_at, 0)"}, // 0: not yet, sorted with the runs lacking a value
        {"ended_at", "NULLIF(ended_at, 0)"},
        {"last_loss", "last_loss"},
        {"tokens_per_s", "tokens_per_s"},
        {"mfu", "mfu"},
        {"last_step", "NULLIF(last_step, -1)"},
        {"world_size", "world_size"},
        {"duration", "(CASE WHEN started_at > 0 THEN (CASE WHEN ended_at > 0 THEN ended_at "
                     "ELSE ? END) - started_at END)"},
    };
    const std::string orderKey = filter.order_by.empty() ? "id" : filter.order_by;
    auto col = std::find_if(orderColumns.begin(), orderColumns.end(),
                            [&](const auto& p) { return p.first == orderKey; });
    if (col == orderColumns.end()) {
        std::string names;
        for (const auto& p : orderColumns) names += (names.empty() ? "" : ", ") + p.first;
        throw StoreError("listRuns: cannot sort by '" + filter.order_by + "'; use one of " + names);
    }

    std::vector<SqlStatement::Value> values;
    std::string sql = "SELECT " + runColumns() + " FROM runs WHERE 1";
    if (!filter.text.empty()) {
        const std::string pattern = likePattern(filter.text);
        sql += " AND (";
        const char* columns[] = {"name", "model_kind", "layout", "tags", "notes"};
        for (size_t c = 0; c < std::size(columns); ++c) {
            sql += std::string(c ? " OR " : "") + columns[c] + " LIKE ? ESCAPE '\\'";
            values.emplace_back(pattern);
        }
        sql += ")";
    }
    if (!filter.states.empty()) {
        sql += " AND state IN (" + placeholders(filter.states.size()) + ")";
        for (const auto& st : filter.states) values.emplace_back(st);
    }
    const std::string dir = filter.descending ? " DESC" : " ASC";
    sql += " ORDER BY " + col->second + dir + " NULLS LAST";
    if (col->second.find('?') != std::string::npos) values.emplace_back(nowSeconds());
    if (orderKey != "id") sql += ", id" + dir;
    if (filter.limit >= 0) {
        sql += " LIMIT ?";
        values.emplace_back(filter.limit);
    }

    SqlStatement& s = m_stmts->get(sql);
    SqlStatement::Use use(s);
    s.bindAll(values);
    std::vector<RunRecord> out;
    while (s.step()) out.push_back(readRun(s));
    return out;
}

std::vector<int64_t> RunStore::markLostRuns(const std::string& host,
                                            const std::function<bool(int64_t pid)>& isAlive) {
    std::vector<std::pair<int64_t, int64_t>> candidates; // id, pid
    {
        SqlStatement& s = m_stmts->get(
            "SELECT id, supervisor_pid FROM runs WHERE state IN ('queued', 'running') "
            "AND supervisor_host = ?1 AND supervisor_pid > 0 "
            "AND id NOT IN (SELECT run FROM slurm_jobs WHERE mode = 'batch')");
        SqlStatement::Use use(s);
        s.bind(1, host);
        while (s.step()) candidates.emplace_back(s.int64(0), s.int64(1));
    }
    std::vector<int64_t> lost;
    for (const auto& [id, pid] : candidates) {
        if (isAlive(pid)) continue;
        // The state test again: the supervisor may have finished the run in the meantime.
        SqlStatement& u = m_stmts->get(
            "UPDATE runs SET state = 'lost', ended_at = ?2, exit_reason = ?3 "
            "WHERE id = ?1 AND state IN ('queued', 'running') AND supervisor_pid = ?4");
        const std::string reason = "its supervisor (pid " + std::to_string(pid) + " on " + host +
                                   ") is no longer running";
        u.bind(1, id);
        u.bind(2, nowSeconds());
        u.bind(3, reason);
        u.bind(4, pid);
        u.run();
        if (sqlite3_changes(m_db) > 0) lost.push_back(id);
    }
    return lost;
}

std::vector<int64_t> RunStore::unfollowedBatchRuns(const std::string& host,
                                                   const std::function<bool(int64_t pid)>& isAlive) const {
    SqlStatement& s = m_stmts->get(
        "SELECT id, supervisor_pid, supervisor_host FROM runs WHERE state IN ('queued', 'running') "
        "AND id IN (SELECT run FROM slurm_jobs WHERE mode = 'batch') ORDER BY id");
    SqlStatement::Use use(s);
    std::vector<std::pair<int64_t, std::pair<int64_t, std::string>>> rows;
    while (s.step()) rows.push_back({s.int64(0), {s.int64(1), s.text(2)}});
    std::vector<int64_t> out;
    for (const auto& [id, supervisor] : rows) {
        const auto& [pid, where] = supervisor;
        if (pid <= 0 || (where == host && !isAlive(pid))) out.push_back(id);
    }
    return out;
}

void RunStore::setSupervisor(int64_t id, int64_t supervisorPid, const std::string& supervisorHost) {
    SqlStatement& s = m_stmts->get(
        "UPDATE runs SET supervisor_pid = ?2, supervisor_host = ?3 WHERE id = ?1 AND state IN ('queued', 'running')");
    s.bind(1, id);
    s.bind(2, supervisorPid);
    s.bind(3, supervisorHost);
    s.run();
    if (sqlite3_changes(m_db) == 0) {
        const auto r = run(id);
        if (!r) requireChanged(m_db, id, m_path, "setSupervisor");
        throw StoreError("setSupervisor: run " + std::to_string(id) + " is " + r->state + ", not queued or running");
    }
}

void RunStore::setSlurmJob(int64_t run, const SlurmJob& job) {
    SqlStatement& s = m_stmts->get(
        "INSERT INTO slurm_jobs (run, job_id, mode, state, reason, nodes, queue_position, time_left_s, t) "
        "VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9) ON CONFLICT (run) DO UPDATE SET job_id = excluded.job_id, "
        "mode = excluded.mode, state = excluded.state, reason = excluded.reason, nodes = excluded.nodes, "
        "queue_position = excluded.queue_position, time_left_s = excluded.time_left_s, t = excluded.t");
    s.bind(1, run);
    s.bind(2, job.job_id);
    s.bind(3, job.mode);
    s.bind(4, job.state);
    s.bind(5, job.reason);
    s.bind(6, job.nodes);
    s.bind(7, job.queue_position);
    s.bind(8, job.time_left_s);
    s.bind(9, job.t > 0 ? job.t : nowSeconds());
    s.run();
}

std::optional<SlurmJob> RunStore::slurmJob(int64_t run) const {
    SqlStatement& s = m_stmts->get(
        "SELECT job_id, mode, state, reason, nodes, queue_position, time_left_s, t FROM slurm_jobs WHERE run = ?1");
    SqlStatement::Use use(s);
    s.bind(1, run);
    if (!s.step()) return std::nullopt;
    SlurmJob j;
    j.job_id = s.text(0);
    j.mode = s.text(1);
    j.state = s.text(2);
    j.reason = s.text(3);
    j.nodes = s.text(4);
    j.queue_position = s.int64(5);
    j.time_left_s = s.int64(6);
    j.t = s.real(7);
    return j;
}

// --- telemetry rows

void RunStore::beginTransaction() { m_stmts->begin.run(); }
void RunStore::commit() { m_stmts->commit.run(); }
void RunStore::rollback() {
    if (!sqlite3_get_autocommit(m_db)) m_stmts->rollback.run();
}

void RunStore::insertMetric(int64_t run, const StepEvent& e) {
    insertMetrics(run, {e});
}

void RunStore::insertDeviceSample(int64_t run, const DeviceEvent& e) { insertEvents(run, std::vector<DeviceEvent>{e}); }

void RunStore::insertSpan(int64_t run, const SpanEvent& e) {
    insertSpans(run, {e});
}

void RunStore::insertComm(int64_t run, const CommEvent& e) { insertEvents(run, std::vector<CommEvent>{e}); }

void RunStore::insertMetrics(int64_t run, const std::vector<StepEvent>& rows) {
    if (rows.empty()) return;
    // Chunks hold steps in order; a batch arrives in order from the supervisor, but sort to be sure.
    const std::vector<StepEvent>* ordered = &rows;
    std::vector<StepEvent> sorted;
    if (!std::is_sorted(rows.begin(), rows.end(), [](const StepEvent& a, const StepEvent& b) { return a.step < b.step; })) {
        sorted = rows;
        std::stable_sort(sorted.begin(), sorted.end(),
                         [](const StepEvent& a, const StepEvent& b) { return a.step < b.step; });
        ordered = &sorted;
    }
    ImplicitTransaction tx(*this);
    SqlStatement& s = m_stmts->insertMetricChunk;
    for (size_t at = 0; at < ordered->size(); at += MetricChunk::kMaxSteps) {
        const size_t count = std::min<size_t>(MetricChunk::kMaxSteps, ordered->size() - at);
        const StepEvent* first = ordered->data() + at;
        const std::string data = MetricChunk::encode(first, count);
        s.bind(1, run);
        s.bind(2, first->step);
        s.bind(3, first[count - 1].step);
        s.bind(4, static_cast<int64_t>(count));
        s.bindBlob(5, data);
        s.run();
    }
    tx.commit();
}

void RunStore::insertDeviceSamples(int64_t run, const std::vector<DeviceEvent>& rows) { insertEvents(run, rows); }

void RunStore::insertSpans(int64_t run, const std::vector<SpanEvent>& rows) {
    if (rows.empty()) return;
    // One row per (step, rank) of the batch.
    std::map<std::pair<int64_t, int>, std::vector<const SpanEvent*>> groups;
    for (const SpanEvent& e : rows) groups[{e.step, e.rank}].push_back(&e);
    ImplicitTransaction tx(*this);
    SqlStatement& s = m_stmts->insertSpanChunk;
    for (auto& [key, spans] : groups) {
        const std::string data = SpanChunk::encode(spans);
        double first = spans.front()->start;
        for (const SpanEvent* e : spans) first = std::min(first, e->start);
        s.bind(1, run);
        s.bind(2, key.first);
        s.bind(3, static_cast<int64_t>(key.second));
        s.bind(4, first);
        s.bind(5, static_cast<int64_t>(spans.size()));
        s.bindBlob(6, data);
        s.run();
    }
    tx.commit();
}

void RunStore::insertComms(int64_t run, const std::vector<CommEvent>& rows) { insertEvents(run, rows); }

int64_t RunStore::insertLog(int64_t run, const LogRow& row) {
    SqlStatement& s = m_stmts->insertLog;
    bindLog(s, 0, run, row);
    s.run();
    return sqlite3_last_insert_rowid(m_db);
}

void RunStore::insertLogs(int64_t run, const std::vector<LogRow>& rows) {
    ImplicitTransaction tx(*this);
    insertRows(m_stmts->insertLog, m_stmts->insertLogs, kLogColumns, run, rows, bindLog);
    tx.commit();
}

void RunStore::insertCheckpoint(int64_t run, const CheckpointEvent& e) {
    insertEvents(run, std::vector<CheckpointEvent>{e});
}

// --- reads

std::vector<StepEvent> RunStore::metrics(int64_t run, int64_t afterStep) const {
    std::vector<StepEvent> out;
    // Steps a schema 1 store wrote, one row each.
    SqlStatement& legacy = m_stmts->get(
        "SELECT step, t, loss, lr, grad_norm, tokens_per_s, samples_per_s, step_ms, step_ms_min, "
        "step_ms_max, slowest_rank, mfu, tokens, peak_mem FROM metrics "
        "WHERE run = ?1 AND step > ?2 ORDER BY step");
    {
        SqlStatement::Use use(legacy);
        legacy.bind(1, run);
        legacy.bind(2, afterStep);
        while (legacy.step()) {
            StepEvent e;
            e.step = legacy.int64(0);
            e.t = legacy.realOrNaN(1);
            e.loss = legacy.realOrNaN(2);
            e.lr = legacy.realOrNaN(3);
            e.grad_norm = legacy.realOrNaN(4);
            e.tokens_per_s = legacy.realOrNaN(5);
            e.samples_per_s = legacy.realOrNaN(6);
            e.step_ms = legacy.realOrNaN(7);
            e.step_ms_min = legacy.realOrNaN(8);
            e.step_ms_max = legacy.realOrNaN(9);
            e.slowest_rank = static_cast<int>(legacy.int64(10));
            e.mfu = legacy.realOrNaN(11);
            e.tokens = legacy.int64(12);
            e.peak_mem = legacy.realOrNaN(13);
            out.push_back(e);
        }
    }
    const size_t legacyRows = out.size();
    SqlStatement& s = m_stmts->get(
        "SELECT data FROM metric_chunks WHERE run = ?1 AND last_step > ?2 ORDER BY first_step");
    {
        SqlStatement::Use use(s);
        s.bind(1, run);
        s.bind(2, afterStep);
        try {
            while (s.step()) MetricChunk::decode(s.blob(0), s.blobSize(0), out);
        } catch (const std::runtime_error& e) {
            throw StoreError(m_path + ": " + e.what() + " (run " + std::to_string(run) +
                             "); the store is damaged, restore it from a copy");
        }
    }
    // A chunk starting before afterStep holds earlier steps too; a step sent twice keeps its last copy.
    out.erase(std::remove_if(out.begin() + static_cast<long>(legacyRows), out.end(),
                             [afterStep](const StepEvent& e) { return e.step <= afterStep; }),
              out.end());
    std::stable_sort(out.begin(), out.end(), [](const StepEvent& a, const StepEvent& b) { return a.step < b.step; });
    auto last = std::unique(out.rbegin(), out.rend(), [](const StepEvent& a, const StepEvent& b) { return a.step == b.step; });
    out.erase(out.begin(), last.base());
    return out;
}

std::vector<DeviceEvent> RunStore::deviceSamples(int64_t run, double sinceT) const {
    // sinceT > 0: only samples after it (polling for new ones); otherwise all of them.
    std::vector<DeviceEvent> out;
    selectEventRows(eventTableSpec<DeviceEvent>(), run, sinceT > 0 ? sinceT : std::numeric_limits<double>::lowest(),
                    [&](const SqlStatement& s) { out.push_back(readEventRow<DeviceEvent>(s)); });
    return out;
}

std::vector<int64_t> RunStore::spanSteps(int64_t run) const {
    // Steps of schema 3 chunks and of older rows; a skip-scan over each primary key (one seek per
    // distinct step).
    SqlStatement& s = m_stmts->get(
        "WITH RECURSIVE chunked(step) AS ("
        "  SELECT (SELECT min(step) FROM span_chunks WHERE run = ?1)"
        "  UNION ALL"
        "  SELECT (SELECT min(step) FROM span_chunks WHERE run = ?1 AND step > chunked.step)"
        "  FROM chunked WHERE chunked.step IS NOT NULL"
        "), legacy(step) AS ("
        "  SELECT (SELECT min(step) FROM spans WHERE run = ?1)"
        "  UNION ALL"
        "  SELECT (SELECT min(step) FROM spans WHERE run = ?1 AND step > legacy.step)"
        "  FROM legacy WHERE legacy.step IS NOT NULL"
        ") SELECT step FROM chunked WHERE step IS NOT NULL UNION SELECT step FROM legacy WHERE step IS NOT NULL "
        "ORDER BY step");
    SqlStatement::Use use(s);
    s.bind(1, run);
    std::vector<int64_t> out;
    while (s.step()) out.push_back(s.int64(0));
    return out;
}

std::vector<SpanEvent> RunStore::spans(int64_t run, int64_t step) const {
    std::vector<SpanEvent> out;
    SqlStatement& legacy = m_stmts->get(
        "SELECT rank, stage, step, microbatch, kind, start, end_t FROM spans WHERE run = ?1 AND step = ?2");
    {
        SqlStatement::Use use(legacy);
        legacy.bind(1, run);
        legacy.bind(2, step);
        while (legacy.step()) {
            SpanEvent e;
            e.rank = static_cast<int>(legacy.int64(0));
            e.stage = static_cast<int>(legacy.int64(1));
            e.step = legacy.int64(2);
            e.microbatch = static_cast<int>(legacy.int64(3));
            e.kind = legacy.text(4);
            e.start = legacy.real(5);
            e.end = legacy.realOrNaN(6);
            out.push_back(e);
        }
    }
    SqlStatement& s = m_stmts->get(
        "SELECT rank, data FROM span_chunks WHERE run = ?1 AND step = ?2 ORDER BY rank, first_start");
    {
        SqlStatement::Use use(s);
        s.bind(1, run);
        s.bind(2, step);
        try {
            while (s.step()) SpanChunk::decode(s.blob(1), s.blobSize(1), step, static_cast<int>(s.int64(0)), out);
        } catch (const std::runtime_error& e) {
            throw StoreError(m_path + ": " + e.what() + " (run " + std::to_string(run) + ", step " +
                             std::to_string(step) + "); the store is damaged, restore it from a copy");
        }
    }
    // Ordered by rank and start; a span sent twice keeps its last copy.
    auto key = [](const SpanEvent& e) { return std::tie(e.rank, e.start, e.stage, e.microbatch, e.kind); };
    std::stable_sort(out.begin(), out.end(), [&](const SpanEvent& a, const SpanEvent& b) { return key(a) < key(b); });
    auto last = std::unique(out.rbegin(), out.rend(), [&](const SpanEvent& a, const SpanEvent& b) { return key(a) == key(b); });
    out.erase(out.begin(), last.base());
    return out;
}

std::vector<CommEvent> RunStore::comms(int64_t run) const { return events<CommEvent>(run); }

std::vector<CheckpointEvent> RunStore::checkpoints(int64_t run) const { return events<CheckpointEvent>(run); }

// One log query, shared by logs() and logCount() so that the count always matches the rows.
struct RunStore::LogSelect {
    std::string sql;
    std::vector<SqlStatement::Value> values; // in the order of the SQL's '?'
    bool fullText = false;
    bool empty = false; // nothing can match (no lines in the id range)
};

RunStore::LogSelect RunStore::buildLogSelect(int64_t run, const LogQuery& q, bool count) const {
    LogSelect sel;
    int minLevel = -1;
    if (!q.min_level.empty()) {
        minLevel = LogLevel::fromNameStrict(q.min_level);
        if (minLevel < 0) {
            throw StoreError("log query: unknown level '" + q.min_level +
                             "'; use debug, info, warn or error");
        }
    }
    const std::string match = ftsQueryFromUserText(q.match);
    sel.fullText = !match.empty();
    const std::string columns = "l.id, l.t, l.rank, l.host, l.level, l.stream, l.message";
    const std::string what = count ? "count(*)" : columns;

    if (!sel.fullText) {
        sel.sql = "SELECT " + what + " FROM logs AS l WHERE l.run = ?";
        sel.values.emplace_back(run);
        if (q.after_id > 0) {
            sel.sql += " AND l.id > ?";
            sel.values.emplace_back(q.after_id);
        }
    } else {
        // Every committed line of the run must be found: index those that are not yet.
        LogIndex& index = logIndex();
        index.catchUp(run);
        // The full-text index covers every run; bounding its rowids to this run's id range keeps
        // a search in one run from walking the matches of all the others.
        int64_t lo = 0, hi = -1;
        try {
            SqlStatement& r = index.get("SELECT (SELECT min(id) FROM main.logs WHERE run = ?1), "
                                        "(SELECT max(id) FROM main.logs WHERE run = ?1)");
            SqlStatement::Use use(r);
            r.bind(1, run);
            if (r.step() && !r.isNull(0)) {
                lo = r.int64(0);
                hi = r.int64(1);
            }
        } catch (const StoreError& e) {
            index.rethrow(e);
        }
        lo = std::max(lo, q.after_id + 1);
        if (hi < lo) {
            sel.empty = true;
            return sel;
        }
        // Counting without other filters needs only the run of each match: the index on
        // (run, id) answers that without reading the lines (twice as fast on a million lines).
        const bool coveringCount = count && q.ranks.empty() && minLevel <= LogLevel::Debug;
        sel.sql = "SELECT " + what + " FROM logindex.logs_fts CROSS JOIN main.logs AS l" +
                  (coveringCount ? " INDEXED BY logs_by_run" : "") +
                  " ON l.id = logs_fts.rowid"
                  " WHERE logs_fts MATCH ? AND logs_fts.rowid >= ? AND logs_fts.rowid <= ?"
                  " AND l.run = ?";
        sel.values.emplace_back(match);
        sel.values.emplace_back(lo);
        sel.values.emplace_back(hi);
        sel.values.emplace_back(run);
    }
    if (!q.ranks.empty()) {
        sel.sql += " AND l.rank IN (" + placeholders(q.ranks.size()) + ")";
        for (int r : q.ranks) sel.values.emplace_back(static_cast<int64_t>(r));
    }
    if (minLevel > LogLevel::Debug) {
        sel.sql += " AND l.level >= ?";
        sel.values.emplace_back(static_cast<int64_t>(minLevel));
        // Spelled out so that the planner may use the partial index of warnings and errors.
        if (minLevel >= LogLevel::Warn) sel.sql += " AND l.level >= 2";
    }
    if (!count) {
        // The full-text index yields rowids in order, so ordering by its rowid needs no sort and
        // a LIMIT stops the search early.
        const std::string order = sel.fullText ? "logs_fts.rowid" : "l.id";
        sel.sql += " ORDER BY " + order + (q.descending ? " DESC" : "");
        sel.sql += " LIMIT ? OFFSET ?";
        sel.values.emplace_back(q.limit < 0 ? int64_t{-1} : q.limit);
        sel.values.emplace_back(std::max<int64_t>(0, q.offset));
    }
    return sel;
}

template <typename RowFn>
void RunStore::runLogSelect(const LogSelect& sel, const LogQuery& q, RowFn&& onRow) const {
    try {
        // A text search runs on the log index's connection, where the index file is attached.
        SqlStatement& s = sel.fullText ? logIndex().get(sel.sql) : m_stmts->get(sel.sql);
        SqlStatement::Use use(s);
        s.bindAll(sel.values);
        while (s.step()) onRow(s);
    } catch (const StoreError& e) {
        const std::string what = e.what();
        // FTS5's own syntax errors, and its tokenizer's for a quote never closed.
        auto at = what.find("fts5:");
        if (at == std::string::npos) at = what.find("unterminated string");
        if (!sel.fullText) throw;
        if (at == std::string::npos) logIndex().rethrow(e); // names the index file when damaged
        const std::string reason = what.substr(at, what.find(" [", at) - at);
        throw StoreError("log search: cannot understand '" + q.match + "' (" + reason +
                         "). Plain words are matched as written; with double quotes, parentheses "
                         "or AND/OR/NOT the text is a full-text query, e.g. "
                         "\"out of memory\" OR nccl");
    }
}

std::vector<LogRow> RunStore::logs(int64_t run, const LogQuery& q) const {
    const LogSelect sel = buildLogSelect(run, q, /*count=*/false);
    std::vector<LogRow> out;
    if (sel.empty) return out;
    runLogSelect(sel, q, [&](const SqlStatement& s) {
        LogRow r;
        r.id = s.int64(0);
        r.t = s.real(1);
        r.rank = static_cast<int>(s.int64(2));
        r.host = s.text(3);
        r.level = LogLevel::name(static_cast<int>(s.int64(4)));
        r.stream = s.text(5);
        r.message = s.text(6);
        out.push_back(std::move(r));
    });
    return out;
}

LogIndex& RunStore::logIndex() const {
    if (!m_logIndex) m_logIndex = std::make_unique<LogIndex>(m_db, m_openUri, m_openFlags, m_busyTimeoutMs);
    return *m_logIndex;
}

std::string RunStore::logIndexPath() const { return LogIndex::pathFor(m_db); }

bool RunStore::indexLogs(int64_t run, int64_t maxLines) { return logIndex().catchUp(run, maxLines); }

void RunStore::indexLogs() { logIndex().catchUpAll(); }

int64_t RunStore::logCount(int64_t run, const LogQuery& q) const {
    const LogSelect sel = buildLogSelect(run, q, /*count=*/true);
    if (sel.empty) return 0;
    int64_t n = 0;
    runLogSelect(sel, q, [&](const SqlStatement& s) { n = s.int64(0); });
    return n;
}

} // namespace parallax

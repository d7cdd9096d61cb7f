#include "core/store/StoreConnection.h"

#include "core/store/SqliteConnection.h"
#include "core/store/StoreSetup.h"
#include "core/store/StoreTypes.h"

#include <sqlite3.h>

#include <chrono>
#include <filesystem>

namespace parallax {

namespace {

namespace fs = std::filesystem;

// Long enough that a reader or another supervisor that holds the lock for a burst of writes is
// waited for; short enough that a stuck process is reported instead of hanging forever.
constexpr int kBusyTimeoutMs = 15000;
// Statements built at run time (log and run queries) are cached by SQL text; their shapes are few
// (one per number of selected ranks and combination of filters), so a small cache hits almost always.
constexpr size_t kMaxCachedQueries = 64;

// A store file's folder is made when missing; a folder given as the store is refused.
void prepareFolder(const std::string& path) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
        throw StoreError("store " + path + " is a folder; pass the path of a database file, e.g. " + path +
                         "/parallax.db");
    }
    checkStoreFile(path);
    const fs::path parent = fs::path(path).parent_path();
    if (!parent.empty() && !fs::exists(parent, ec)) {
        fs::create_directories(parent, ec);
        if (ec) {
            throw StoreError("cannot create the folder " + parent.string() + " for store " + path + ": " +
                             ec.message() + "; pass another --store path");
        }
    }
}

} // namespace

double nowSeconds() {
    using namespace std::chrono;
    return duration<double>(system_clock::now().time_since_epoch()).count();
}

StoreConnection::StoreConnection(const std::string& path) : m_path(path) {
    // SQLite's memory statistics take one process-wide mutex on every allocation, which makes
    // threads that each use their own connection (the rows' writer and the log indexer) take
    // turns instead of running at once. Only possible before SQLite is first used; later (another
    // library used it first) this fails harmlessly.
    static const bool noMemoryStatistics = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) == SQLITE_OK;
    (void)noMemoryStatistics;
    if (path.empty()) throw StoreError("the store path is empty; pass --store PATH");
    const bool isFile = path != ":memory:" && path.rfind("file:", 0) != 0;
    if (isFile) prepareFolder(path);

    m_openFlags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | (isFile ? 0 : SQLITE_OPEN_URI);
    m_busyTimeoutMs = kBusyTimeoutMs;
    if (isFile) createStoreWhole(path, m_openFlags, kBusyTimeoutMs);
    m_openUri = path;
    m_db = openSqlite(path, m_openFlags, kBusyTimeoutMs, "store",
                      "check that the file and its folder are readable and writable");
    auto finishOpening = [this] {
        try {
            setUpStore(m_db, m_path, m_busyTimeoutMs);
            m_begin = prepare("BEGIN IMMEDIATE");
            m_commit = prepare("COMMIT");
            m_rollback = prepare("ROLLBACK");
        } catch (...) {
            m_begin = SqlStatement();
            m_commit = SqlStatement();
            m_rollback = SqlStatement();
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
        m_openUri = "file:" + fileUriPath(fs::absolute(path).string()) + "?immutable=1";
        m_openFlags = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI;
        m_db = openSqlite(m_openUri, m_openFlags, kBusyTimeoutMs, "store", "check that the file is readable");
        finishOpening();
    }
}

StoreConnection::~StoreConnection() {
    m_cache.clear();
    m_begin = SqlStatement();
    m_commit = SqlStatement();
    m_rollback = SqlStatement();
    if (m_db) {
        // Keeps the query planner's statistics current. The analysis limit bounds the work on
        // tables of millions of rows, so closing stays quick.
        sqlite3_exec(m_db, "PRAGMA analysis_limit = 400; PRAGMA optimize", nullptr, nullptr, nullptr);
        sqlite3_close_v2(m_db);
    }
}

bool StoreConnection::openedReadOnly() const { return (m_openFlags & SQLITE_OPEN_READONLY) != 0; }

void StoreConnection::setBusyTimeout(int milliseconds) {
    m_busyTimeoutMs = milliseconds;
    sqlite3_busy_timeout(m_db, milliseconds);
}

SqlStatement& StoreConnection::get(const std::string& sql) {
    auto it = m_cache.find(sql);
    if (it != m_cache.end()) return it->second;
    if (m_cache.size() >= kMaxCachedQueries) m_cache.clear();
    return m_cache.emplace(sql, SqlStatement(m_db, sql, m_path)).first->second;
}

void StoreConnection::execute(const std::string& sql, const std::vector<SqlStatement::Value>& values) {
    SqlStatement& s = get(sql);
    SqlStatement::Use use(s);
    s.bindAll(values);
    while (s.step()) {
    }
}

void StoreConnection::begin() { m_begin.run(); }
void StoreConnection::commit() { m_commit.run(); }
void StoreConnection::rollback() {
    if (inTransaction()) m_rollback.run();
}
bool StoreConnection::inTransaction() const { return sqlite3_get_autocommit(m_db) == 0; }

void StoreConnection::requireChanged(int64_t id, const char* what) const {
    if (sqlite3_changes(m_db) == 0)
        throw StoreError("store " + m_path + ": " + what + ": run " + std::to_string(id) + " does not exist");
}

int64_t StoreConnection::lastInsertId() const { return sqlite3_last_insert_rowid(m_db); }
int StoreConnection::changes() const { return sqlite3_changes(m_db); }

ImplicitTransaction::ImplicitTransaction(StoreConnection& connection)
    : m_connection(connection), m_own(!connection.inTransaction()) {
    if (m_own) m_connection.begin();
}

ImplicitTransaction::~ImplicitTransaction() {
    if (m_own && !m_done) {
        try {
            m_connection.rollback();
        } catch (const StoreError&) {
            // The error that brought us here is the one to report.
        }
    }
}

void ImplicitTransaction::commit() {
    if (m_own) m_connection.commit();
    m_done = true;
}

} // namespace parallax

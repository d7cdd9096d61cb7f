#include "core/store/LogIndex.h"

#include "core/store/SqliteConnection.h"

#include <sqlite3.h>

#include <algorithm>
#include <vector>

namespace parallax {

namespace {

// The index file's schema; `s` is "" on a connection where the index file is `main`, or
// "logindex." where it is attached.
//
// Contentless (content=''): the text lives only in the store's `logs`; a search joins the matches'
// rowids to logs.id. Such a table cannot give back what it indexed, so removing a line needs its
// original text ('delete' command), which RunStore::deleteRun reads from `logs` before deleting
// the rows. columnsize=0: no table of document lengths to update per line; they serve only bm25
// ranking, and matches are listed in line order. detail=full (the default) keeps token positions,
// so that phrase queries and NEAR work.
std::string indexSchema(const std::string& s) {
    return "CREATE VIRTUAL TABLE IF NOT EXISTS " + s +
           "logs_fts USING fts5(message, content='', columnsize=0);"
           // Merge segments 8 at a time rather than 4: fewer merges while lines stream in, and
           // searches over a million lines still take milliseconds.
           "INSERT INTO " + s + "logs_fts(logs_fts, rank) VALUES ('automerge', 8);"
           // Up to 16 MiB of pending terms per transaction instead of 1 MiB: a batch of lines
           // becomes one segment instead of several, which saves a good part of the merging
           // (about a fifth of the indexing time where measured).
           "INSERT INTO " + s + "logs_fts(logs_fts, rank) VALUES ('hashsize', 16777216);"
           // Index leaves that fill the file's 16 KiB pages (see IndexFile::prepare).
           "INSERT INTO " + s + "logs_fts(logs_fts, rank) VALUES ('pgsz', 16000);"
           // Per run, the highest logs.id whose line is in the index: every line of the run up
           // to it is, none after it is.
           "CREATE TABLE IF NOT EXISTS " + s +
           "indexed (run INTEGER PRIMARY KEY, through_id INTEGER NOT NULL);";
}

std::string damagedText(const std::string& path, const std::string& why) {
    return "log index " + path + " is damaged (" + why +
           "); delete it: it is rebuilt from the store";
}

// A connection of its own to the index file, to create or check it: there the index file is
// `main`, so BEGIN IMMEDIATE locks the index only, never the store.
class IndexFile {
public:
    IndexFile(const std::string& path, int busyTimeoutMs) : m_path(path), m_busyTimeoutMs(busyTimeoutMs) {
        m_db = openSqlite(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                          busyTimeoutMs, "the log index", "check that its folder is writable");
    }
    ~IndexFile() { sqlite3_close_v2(m_db); }
    IndexFile(const IndexFile&) = delete;
    IndexFile& operator=(const IndexFile&) = delete;

    // Creates the schema in a new file; checks an existing one.
    void prepare() {
        const int64_t objects = integer("SELECT count(*) FROM sqlite_master");
        const int64_t appId = integer("PRAGMA application_id");
        int64_t version = integer("PRAGMA user_version");
        const bool fresh = objects == 0 && appId == 0;
        if (!fresh && appId != LogIndex::kApplicationId) {
            throw StoreError(m_path + " is not a Parallax log index (a SQLite database of another "
                                      "program, application_id " +
                             std::to_string(appId) +
                             "); move it away or delete it: the index is rebuilt from the store");
        }
        checkVersion(version);
        if (version == LogIndex::kVersion) return;
        // Larger pages than the store's 4 KiB: the index is written as long runs of segment
        // leaves, and fewer, larger pages make indexing about a tenth faster where measured.
        if (fresh) exec("PRAGMA page_size = 16384");
        // WAL: searches read the index while a supervisor's indexer writes it.
        if (selectWal(m_db, m_busyTimeoutMs, "log index " + m_path + ": cannot configure it") != "wal") {
            throw StoreError("log index " + m_path +
                             ": cannot use WAL mode; network file systems do not support it; put "
                             "the store on a local disk with --store PATH");
        }
        exec("BEGIN IMMEDIATE");
        try {
            // Another process may have created it while we waited for the lock.
            version = integer("PRAGMA user_version");
            checkVersion(version);
            if (version < LogIndex::kVersion) {
                exec(indexSchema(""));
                exec("PRAGMA application_id = " + std::to_string(LogIndex::kApplicationId) +
                     "; PRAGMA user_version = " + std::to_string(LogIndex::kVersion));
            }
            exec("COMMIT");
        } catch (...) {
            sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
            throw;
        }
    }

private:
    void checkVersion(int64_t version) const {
        if (version > LogIndex::kVersion) {
            throw StoreError("log index " + m_path + " was written by a newer Parallax (version " +
                             std::to_string(version) + ", this build reads up to " +
                             std::to_string(LogIndex::kVersion) +
                             "); upgrade Parallax, or delete the file: it is rebuilt from the store");
        }
    }

    [[noreturn]] void fail(const std::string& what) const {
        const int code = sqlite3_errcode(m_db) & 0xff;
        const std::string msg = sqlite3_errmsg(m_db);
        if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT) throw StoreError(damagedText(m_path, msg));
        throw StoreError("log index " + m_path + ": " + what + ": " + msg);
    }

    void exec(const std::string& sql) {
        char* err = nullptr;
        if (sqlite3_exec(m_db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
            sqlite3_free(err);
            fail("cannot create its tables");
        }
    }

    int64_t integer(const char* sql) {
        sqlite3_stmt* st = nullptr;
        int64_t value = 0;
        int rc = sqlite3_prepare_v2(m_db, sql, -1, &st, nullptr);
        if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) value = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        if (rc != SQLITE_ROW) fail("cannot read it");
        return value;
    }

    sqlite3* m_db = nullptr;
    std::string m_path;
    int m_busyTimeoutMs = 0;
};

} // namespace

// A write transaction of the index file. Its first statement must be a write to `logindex`: a
// deferred transaction then takes the index's write lock only (waiting for it up to the busy
// timeout), and the store is only read. When the connection is already in a transaction (a store
// in memory, whose caller holds one), the work joins it.
class LogIndex::WriteTransaction {
public:
    explicit WriteTransaction(LogIndex& index)
        : m_index(index), m_own(sqlite3_get_autocommit(index.m_db) != 0) {
        if (m_own) m_index.get("BEGIN").run();
    }
    ~WriteTransaction() {
        if (m_own && !m_done) sqlite3_exec(m_index.m_db, "ROLLBACK", nullptr, nullptr, nullptr);
    }
    WriteTransaction(const WriteTransaction&) = delete;
    WriteTransaction& operator=(const WriteTransaction&) = delete;
    void commit() {
        if (m_own) m_index.get("COMMIT").run();
        m_done = true;
    }

private:
    LogIndex& m_index;
    bool m_own;
    bool m_done = false;
};

std::string LogIndex::pathFor(sqlite3* storeDb) {
    const char* file = sqlite3_db_filename(storeDb, "main");
    return file && *file ? std::string(file) + ".logindex" : std::string();
}

LogIndex::LogIndex(sqlite3* storeDb, const std::string& storeUri, int openFlags, int busyTimeoutMs)
    : m_path(pathFor(storeDb)) {
    if (m_path.empty()) {
        m_db = storeDb;
        m_path = ":memory:";
    } else if (sqlite3_db_readonly(storeDb, "main") == 1) {
        // A store nobody may write (an archive on a read-only share) has no index file beside it
        // either: its lines are searched through an index in memory, filled as searches need it.
        m_db = openSqlite(storeUri, openFlags, busyTimeoutMs, "store", "it is needed to search its logs");
        m_ownsDb = true;
        m_path = ":memory:";
    } else {
        IndexFile(m_path, busyTimeoutMs).prepare();
        m_db = openSqlite(storeUri, openFlags, busyTimeoutMs, "store", "it is needed to search its logs");
        m_ownsDb = true;
    }
    try {
        attach();
        checkConsistency();
    } catch (...) {
        m_cache.clear();
        if (m_ownsDb) sqlite3_close_v2(m_db);
        else sqlite3_exec(m_db, "DETACH logindex", nullptr, nullptr, nullptr);
        throw;
    }
}

LogIndex::~LogIndex() {
    m_cache.clear();
    if (m_ownsDb) sqlite3_close_v2(m_db);
}

void LogIndex::attach() {
    {
        SqlStatement a(m_db, "ATTACH ?1 AS logindex", m_path);
        a.bind(1, m_path);
        try {
            a.run();
        } catch (const StoreError& e) {
            rethrow(e);
        }
    }
    persistWal(m_db, "logindex");
    if (m_path == ":memory:") {
        // In memory: nothing to check, the schema is created here.
        char* err = nullptr;
        if (sqlite3_exec(m_db, indexSchema("logindex.").c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
            const std::string msg = err ? err : sqlite3_errmsg(m_db);
            sqlite3_free(err);
            throw StoreError("cannot create the log index in memory: " + msg);
        }
        return;
    }
    char* err = nullptr;
    const char* pragmas = "PRAGMA logindex.synchronous = NORMAL;" // as the store: see RunStore::migrate
                          "PRAGMA logindex.cache_size = -32768;"
                          // Merging segments frees pages all the time; zeroing them (the default
                          // of some builds) costs time and protects nothing the store does not
                          // hold anyway.
                          "PRAGMA logindex.secure_delete = OFF;"
                          "PRAGMA logindex.journal_size_limit = 67108864;"
                          "PRAGMA main.cache_size = -32768;"
                          "PRAGMA temp_store = MEMORY;"
                          "PRAGMA wal_autocheckpoint = 4000;";
    if (sqlite3_exec(m_db, pragmas, nullptr, nullptr, &err) != SQLITE_OK) {
        const std::string msg = err ? err : sqlite3_errmsg(m_db);
        sqlite3_free(err);
        throw StoreError("log index " + m_path + ": cannot configure the connection: " + msg);
    }
}

// The index must never hold lines the store does not: a line id is reused once the run with the
// highest ids is deleted, and a stale entry would make the new line match the old one's words.
// That can happen only when the process died in RunStore::deleteRun between deleting the rows
// and committing the index, or when the store was replaced by an older copy. Either way the
// remedy is to start the index afresh; it fills again as runs are searched.
void LogIndex::checkConsistency() {
    try {
        WriteTransaction tx(*this);
        get("DELETE FROM logindex.indexed WHERE run IS NULL").run(); // takes the index's write lock
        SqlStatement& stale = get(
            "SELECT count(*) FROM logindex.indexed AS x WHERE x.through_id > "
            "coalesce((SELECT max(id) FROM main.logs WHERE run = x.run), 0)");
        int64_t n = 0;
        {
            SqlStatement::Use use(stale);
            if (stale.step()) n = stale.int64(0);
        }
        if (n > 0) {
            get("INSERT INTO logindex.logs_fts(logs_fts) VALUES ('delete-all')").run();
            get("DELETE FROM logindex.indexed").run();
        }
        tx.commit();
    } catch (const StoreError& e) {
        rethrow(e);
    }
}

SqlStatement& LogIndex::get(const std::string& sql) {
    auto it = m_cache.find(sql);
    if (it != m_cache.end()) return it->second;
    // Few shapes (one per combination of log filters); a bound keeps a long session's cache small.
    if (m_cache.size() >= 64) m_cache.clear();
    return m_cache.emplace(sql, SqlStatement(m_db, sql, m_path)).first->second;
}

void LogIndex::setBusyTimeout(int milliseconds) {
    if (m_ownsDb) sqlite3_busy_timeout(m_db, milliseconds);
}

bool LogIndex::catchUp(int64_t run, int64_t maxLines, int64_t batch) {
    try {
        SqlStatement& state = get(
            "SELECT coalesce((SELECT through_id FROM logindex.indexed WHERE run = ?1), 0), "
            "coalesce((SELECT max(id) FROM main.logs WHERE run = ?1), 0)");
        auto read = [&](int64_t& through, int64_t& last) {
            SqlStatement::Use use(state);
            state.bind(1, run);
            through = last = 0;
            if (state.step()) {
                through = state.int64(0);
                last = state.int64(1);
            }
        };
        int64_t through = 0, last = 0;
        read(through, last); // without a lock: the common case, nothing to do
        if (through == last) return true;
        if (maxLines == 0) return false;

        int64_t indexed = 0;
        for (;;) {
            WriteTransaction tx(*this);
            SqlStatement& lock =
                get("INSERT OR IGNORE INTO logindex.indexed (run, through_id) VALUES (?1, 0)");
            lock.bind(1, run);
            lock.run();
            // Read again under the lock: another indexer (a search, a supervisor's thread) may
            // have indexed these lines meanwhile, and must not index them twice.
            read(through, last);
            if (through > last) {
                // See checkConsistency.
                get("INSERT INTO logindex.logs_fts(logs_fts) VALUES ('delete-all')").run();
                get("DELETE FROM logindex.indexed").run();
                lock.bind(1, run);
                lock.run();
                through = 0;
            }
            if (through >= last) {
                tx.commit();
                return true;
            }
            int64_t upper = last;
            if (maxLines > 0) batch = std::min(batch, maxLines - indexed);
            if (batch > 0) {
                SqlStatement& nth = get("SELECT id FROM main.logs WHERE run = ?1 AND id > ?2 "
                                        "ORDER BY id LIMIT 1 OFFSET ?3");
                SqlStatement::Use use(nth);
                nth.bind(1, run);
                nth.bind(2, through);
                nth.bind(3, batch - 1);
                if (nth.step()) upper = std::min(upper, nth.int64(0));
            }
            // In id order: FTS5 writes its pending terms out whenever a rowid is not above the
            // previous one.
            SqlStatement& add = get(
                "INSERT INTO logindex.logs_fts (rowid, message) SELECT id, message FROM main.logs "
                "WHERE run = ?1 AND id > ?2 AND id <= ?3 ORDER BY id");
            add.bind(1, run);
            add.bind(2, through);
            add.bind(3, upper);
            add.run();
            indexed += sqlite3_changes(m_db);
            SqlStatement& done = get("UPDATE logindex.indexed SET through_id = ?2 WHERE run = ?1");
            done.bind(1, run);
            done.bind(2, upper);
            done.run();
            tx.commit();
            // Caught up with the lines committed when this batch began; lines still streaming in
            // are the next call's.
            if (upper == last) return true;
            if (maxLines > 0 && indexed >= maxLines) return false;
        }
    } catch (const StoreError& e) {
        rethrow(e);
    }
}

void LogIndex::catchUpAll() {
    std::vector<int64_t> runs;
    try {
        // One seek per distinct run of the (run, id) index rather than a scan of every line.
        SqlStatement& s = get(
            "WITH RECURSIVE r(run) AS ("
            "  SELECT (SELECT min(run) FROM main.logs)"
            "  UNION ALL"
            "  SELECT (SELECT min(run) FROM main.logs WHERE run > r.run) FROM r WHERE r.run IS NOT NULL"
            ") SELECT run FROM r WHERE run IS NOT NULL");
        SqlStatement::Use use(s);
        while (s.step()) runs.push_back(s.int64(0));
    } catch (const StoreError& e) {
        rethrow(e);
    }
    for (int64_t run : runs) catchUp(run);
}

void LogIndex::forgetRun(int64_t run, const std::function<void()>& deleteRows) {
    try {
        WriteTransaction tx(*this);
        SqlStatement& lock =
            get("INSERT OR IGNORE INTO logindex.indexed (run, through_id) VALUES (?1, 0)");
        lock.bind(1, run);
        lock.run();
        int64_t through = 0;
        {
            SqlStatement& s = get("SELECT through_id FROM logindex.indexed WHERE run = ?1");
            SqlStatement::Use use(s);
            s.bind(1, run);
            if (s.step()) through = s.int64(0);
        }
        if (through > 0) {
            // A contentless index forgets a line given the text it indexed.
            SqlStatement& del = get(
                "INSERT INTO logindex.logs_fts (logs_fts, rowid, message) "
                "SELECT 'delete', id, message FROM main.logs WHERE run = ?1 AND id <= ?2 ORDER BY id");
            del.bind(1, run);
            del.bind(2, through);
            del.run();
        }
        SqlStatement& drop = get("DELETE FROM logindex.indexed WHERE run = ?1");
        drop.bind(1, run);
        drop.run();
        // The rows go while the index stays locked: a search of this run in between would index
        // them again, and its entries would outlive the rows. Should the process die after the
        // rows are gone and before the index commits, checkConsistency finds the stale run.
        deleteRows();
        tx.commit();
    } catch (const StoreError& e) {
        rethrow(e);
    }
}

void LogIndex::rethrow(const StoreError& e) const {
    const int code = sqlite3_errcode(m_db) & 0xff;
    if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT) throw StoreError(damagedText(m_path, e.what()));
    throw e;
}

} // namespace parallax

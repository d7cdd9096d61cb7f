#include "core/store/StoreSetup.h"

#include "core/store/EventTables.h"
#include "core/store/RunStore.h"
#include "core/store/Schema.h"
#include "core/store/SqliteConnection.h"
#include "core/store/StoreHealth.h"

#include <sqlite3.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>

namespace parallax {

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
int64_t queryInt(sqlite3* db, const std::string& path, const char* sql, const std::string& what) {
    sqlite3_stmt* st = nullptr;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, nullptr);
    int64_t value = 0;
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) value = sqlite3_column_int64(st, 0);
    }
    const std::string msg = sqlite3_errmsg(db);
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW) throw StoreError("store " + path + ": " + what + ": " + msg);
    return value;
}

// Whether `path` starts as an SQLite file does: a damaged store, rather than a file of another kind.
bool hasSqliteHeader(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    char head[16] = {};
    in.read(head, sizeof head);
    return in.gcount() == sizeof head && std::string(head, sizeof head) == std::string("SQLite format 3\0", 16);
}

// How many schema objects the file has. Read before anything is written to it: a file of another
// program must be left exactly as it was.
int64_t countSchemaObjects(sqlite3* db, const std::string& path) {
    try {
        return queryInt(db, path, "SELECT count(*) FROM sqlite_master", "cannot read it");
    } catch (const StoreError&) {
        const int code = sqlite3_errcode(db) & 0xff;
        if ((code == SQLITE_NOTADB || code == SQLITE_CORRUPT) && hasSqliteHeader(path))
            throwIfDamaged(sqlite3_extended_errcode(db), path, "cannot read its schema", sqlite3_errmsg(db));
        if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT) {
            throw StoreError(path + " is not a Parallax store: it is not a SQLite database (" + sqlite3_errmsg(db) +
                             "); pass another --store path, or move the file away");
        }
        throw;
    }
}

// Refuses a database of another program or of a newer Parallax; returns its schema version.
int64_t identify(sqlite3* db, const std::string& path) {
    const int64_t objects = countSchemaObjects(db, path);
    const int64_t appId = queryInt(db, path, "PRAGMA application_id", "cannot read it");
    const int64_t version = queryInt(db, path, "PRAGMA user_version", "cannot read it");
    const bool fresh = objects == 0 && appId == 0;
    if (!fresh && appId != kStoreApplicationId) {
        throw StoreError(path +
                         " is a SQLite database of another program, not a Parallax store "
                         "(application_id " +
                         std::to_string(appId) + ", " + std::to_string(objects) +
                         " schema objects); pass another --store path");
    }
    if (version > RunStore::kSchemaVersion) {
        throw StoreError(path + " was written by a newer Parallax (schema " + std::to_string(version) +
                         ", this build reads up to " + std::to_string(RunStore::kSchemaVersion) +
                         "); upgrade Parallax or use another --store path");
    }
    return version;
}

void configureWriter(sqlite3* db, const std::string& path, int busyTimeoutMs) {
    // WAL lets the console read while a supervisor writes. It needs shared memory between the
    // processes, which network file systems do not give.
    const std::string mode = selectWal(db, busyTimeoutMs, "store " + path + ": cannot select WAL mode");
    if (mode != "wal" && mode != "memory") {
        throw StoreError("store " + path + ": cannot use WAL mode (journal mode stays '" + mode +
                         "'); network file systems do not support it; put the store on a local "
                         "disk with --store PATH");
    }
    // NORMAL in WAL mode: a power loss can drop the last transactions, never corrupt the file.
    execOrThrow(db, path,
                "PRAGMA synchronous = NORMAL;"
                "PRAGMA temp_store = MEMORY;"
                "PRAGMA cache_size = -32768;"          // KiB: 32 MiB per connection at most
                "PRAGMA journal_size_limit = 67108864;" // truncate the WAL to 64 MiB after bursts
                "PRAGMA wal_autocheckpoint = 4000;",    // pages (16 MiB): fewer, larger checkpoints
                "cannot configure the connection");
}

} // namespace

void checkStoreFile(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
    // A store appears whole (createStoreWhole): an empty file is no store in the making.
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

void createStoreWhole(const std::string& path, int openFlags, int busyTimeoutMs) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 || errno != ENOENT) return;
    std::random_device entropy;
    const std::string made = path + ".new-" + std::to_string(::getpid()) + "-" + std::to_string(entropy());
    const auto removeMade = [&made] {
        for (const std::string& file : {made, made + "-wal", made + "-shm"}) ::unlink(file.c_str());
    };
    try {
        sqlite3* db = openSqlite(made, openFlags, busyTimeoutMs, "store", "");
        try {
            setUpStore(db, made, busyTimeoutMs);
        } catch (...) {
            sqlite3_close_v2(db);
            throw;
        }
        // The last connection's close folds the WAL into the file: it is complete by itself.
        if (sqlite3_close(db) != SQLITE_OK) throw StoreError("store " + made + ": cannot close it");
    } catch (const StoreError&) {
        removeMade(); // the folder does not let a store be made here; opening `path` says why
        return;
    }
    // link() never replaces: whoever links first made the store, and the others open theirs.
    (void)::link(made.c_str(), path.c_str());
    removeMade();
}

std::string fileUriPath(const std::string& path) {
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

void setUpStore(sqlite3* db, const std::string& path, int busyTimeoutMs) {
    const int64_t version = identify(db, path);
    if (sqlite3_db_readonly(db, "main") == 1) {
        // Read-only: nothing can be changed, nor needs to be, as long as the schema is current.
        if (version < RunStore::kSchemaVersion) {
            throw StoreError("store " + path + " is read-only and was written by an earlier version (schema " +
                             std::to_string(version) + ", this build reads " +
                             std::to_string(RunStore::kSchemaVersion) +
                             "); open it once where it can be written, to upgrade it");
        }
        execOrThrow(db, path, "PRAGMA temp_store = MEMORY; PRAGMA cache_size = -32768;",
                    "cannot configure the connection");
        return;
    }
    configureWriter(db, path, busyTimeoutMs);
    applyMigrations(db, path, storeMigrations());
    ensureEventTables(db, path);
}

} // namespace parallax

#include "core/store/SqliteConnection.h"

#include "core/store/StoreTypes.h"

#include <sqlite3.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>

namespace parallax {

namespace {

// Runs may keep secrets (a spec's environment, a tokenized dataset path): a new store or index
// file is readable by its owner only. SQLite gives its -wal and -shm files the database file's
// permissions. Only a file that does not exist yet is created here, so no descriptor of a file
// some connection of this process has open is ever closed (see the header).
void createPrivate(const std::string& path, int flags) {
    if (!(flags & SQLITE_OPEN_CREATE) || path.empty() || path == ":memory:" || path.rfind("file:", 0) == 0)
        return;
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) ::close(fd);
}

} // namespace

void persistWal(sqlite3* db, const char* schema) {
    int persist = 1;
    // SQLITE_NOTFOUND for a database in memory, which has no WAL file to keep.
    sqlite3_file_control(db, schema, SQLITE_FCNTL_PERSIST_WAL, &persist);
}

std::string selectWal(sqlite3* db, int busyTimeoutMs, const std::string& what) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(busyTimeoutMs);
    for (int attempt = 0;; ++attempt) {
        sqlite3_stmt* st = nullptr;
        std::string mode;
        int rc = sqlite3_prepare_v2(db, "PRAGMA journal_mode = WAL", -1, &st, nullptr);
        if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
            if (const auto* text = sqlite3_column_text(st, 0)) mode = reinterpret_cast<const char*>(text);
        }
        const std::string message = sqlite3_errmsg(db);
        sqlite3_finalize(st);
        if (rc == SQLITE_ROW) return mode;
        const int code = rc & 0xff;
        if ((code != SQLITE_BUSY && code != SQLITE_LOCKED) || std::chrono::steady_clock::now() >= deadline)
            throw StoreError(what + ": " + message);
        std::this_thread::sleep_for(std::chrono::milliseconds(std::min(1 + attempt, 20)));
    }
}

sqlite3* openSqlite(const std::string& path, int flags, int busyTimeoutMs, const std::string& what,
                    const std::string& hint) {
    createPrivate(path, flags);
    sqlite3* db = nullptr;
    const int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
    if (rc != SQLITE_OK) {
        const std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
        sqlite3_close_v2(db);
        throw StoreError("cannot open " + what + " " + path + ": " + msg + (hint.empty() ? "" : "; " + hint));
    }
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, busyTimeoutMs);
    persistWal(db, "main");
    return db;
}

} // namespace parallax

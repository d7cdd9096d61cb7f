#pragma once

// Damages a store's file the way a failing disk or a stray writer does: garbage over the root page
// of every table and index (page 1, the header and the start of the schema, stays readable, so the
// store still opens). Header-only; link SQLite::SQLite3.
#include <sqlite3.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace parallax::test {

namespace detail {

inline sqlite3* openRaw(const std::string& path) {
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
        sqlite3_close_v2(db);
        throw std::runtime_error("cannot open " + path);
    }
    sqlite3_busy_timeout(db, 10000);
    return db;
}

inline void execRaw(sqlite3* db, const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
        const std::string msg = err ? err : sqlite3_errmsg(db);
        sqlite3_free(err);
        throw std::runtime_error(sql + ": " + msg);
    }
}

inline std::vector<int64_t> integers(sqlite3* db, const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    std::vector<int64_t> out;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK)
        throw std::runtime_error(sql + ": " + sqlite3_errmsg(db));
    while (sqlite3_step(st) == SQLITE_ROW) out.push_back(sqlite3_column_int64(st, 0));
    sqlite3_finalize(st);
    return out;
}

} // namespace detail

// Returns the bytes of garbage written. Every page lives in the main file first (the WAL is
// checkpointed into it), so no copy in the WAL hides the damage. Connections that are open keep
// what they cached until another connection writes: call touchStore() for them to notice.
inline int64_t garbleStorePages(const std::string& path, uint32_t seed = 1234) {
    sqlite3* db = detail::openRaw(path);
    std::vector<int64_t> pages, pageSize;
    try {
        detail::execRaw(db, "PRAGMA wal_checkpoint(TRUNCATE)");
        pageSize = detail::integers(db, "PRAGMA page_size");
        pages = detail::integers(db, "SELECT rootpage FROM sqlite_master WHERE rootpage > 1");
    } catch (...) {
        sqlite3_close_v2(db);
        throw;
    }
    sqlite3_close_v2(db);
    const int fd = ::open(path.c_str(), O_WRONLY);
    if (fd < 0) throw std::runtime_error("cannot open " + path + " to damage it");
    std::mt19937 random(seed);
    std::vector<unsigned char> garbage(static_cast<size_t>(pageSize.at(0)));
    int64_t written = 0;
    for (const int64_t page : pages) {
        for (unsigned char& b : garbage) b = static_cast<unsigned char>(random());
        if (::pwrite(fd, garbage.data(), garbage.size(), (page - 1) * pageSize[0]) ==
            static_cast<ssize_t>(garbage.size()))
            written += static_cast<int64_t>(garbage.size());
    }
    ::fsync(fd);
    ::close(fd);
    return written;
}

// A write that touches page 1 only (the same application id again): open connections see the
// store changed and drop their cached pages, so they read the damaged ones from the file.
inline void touchStore(const std::string& path) {
    sqlite3* db = detail::openRaw(path);
    try {
        const int64_t id = detail::integers(db, "PRAGMA application_id").at(0);
        detail::execRaw(db, "PRAGMA application_id = " + std::to_string(id));
    } catch (...) {
        sqlite3_close_v2(db);
        throw;
    }
    sqlite3_close_v2(db);
}

} // namespace parallax::test

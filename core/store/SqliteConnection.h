#pragma once

#include <string>

struct sqlite3;

namespace parallax {

// Opens a SQLite connection the way every connection to a store or its log index must be opened:
// extended result codes, a busy timeout, and a write-ahead log that is never deleted.
//
// Why the WAL must persist: POSIX record locks belong to a process, not to a connection, and a
// process loses every lock it holds on a file as soon as it closes *any* descriptor of that file
// (a file dialog that peeks into the store's folder is enough). A supervisor that closes its
// connection then finds no shared lock left, believes it is the last user, and by default deletes
// store.db-wal and store.db-shm, which the console still has open and mapped: its later reads and
// writes go to files nobody else sees. With SQLITE_FCNTL_PERSIST_WAL on every connection the files
// are only ever truncated, never unlinked, so every process keeps sharing the same WAL index.
//
// Throws StoreError: "cannot open <what> <path>: <SQLite's message>; <hint>".
sqlite3* openSqlite(const std::string& path, int flags, int busyTimeoutMs, const std::string& what,
                    const std::string& hint);

// Runs `PRAGMA journal_mode = WAL` on `db` and returns the journal mode in effect afterwards
// ("wal", or the mode that stays where WAL is impossible, e.g. on a network file system).
// Switching a file to WAL takes its exclusive lock. When two processes open a new file at once
// (a console watching a store a supervisor is creating), SQLite answers SQLITE_BUSY at once instead
// of waiting: it skips the busy handler where waiting could deadlock. The switch is therefore tried
// again until `busyTimeoutMs` has passed. Throws StoreError("<what>: <SQLite's message>").
std::string selectWal(sqlite3* db, int busyTimeoutMs, const std::string& what);

// Applies the same persistence to an attached database (schema `schema` of `db`), e.g. after ATTACH.
void persistWal(sqlite3* db, const char* schema);

} // namespace parallax

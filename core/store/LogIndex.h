#pragma once

#include "core/store/SqlStatement.h"
#include "core/store/StoreTypes.h"

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

struct sqlite3;

namespace parallax {

// The full-text index of a store's log lines, kept in a SQLite file of its own beside the store
// (<store>.logindex, attached as `logindex`): a contentless FTS5 table `logs_fts` whose rowids are
// logs.id, and `indexed`, per run, the highest logs.id whose line is in the index.
//
// Why a file of its own: SQLite has one writer per database file, and tokenizing a line costs
// more than storing it. With the index in the store, a supervisor that streams logs spends most
// of its write lock (and of one core) on the index. Here the rows and the index are written by
// two connections at once, and the row writer never waits for the indexer.
//
// The index is derived data: it is filled from `logs` some time after the lines are committed
// ("catching up", in transactions of the index file only), a search catches up the run it
// searches first, and deleting the file loses nothing. Owned by RunStore; one per connection.
class LogIndex {
public:
    static constexpr int kVersion = 1; // PRAGMA user_version of the index file
    // PRAGMA application_id of an index file ("PRLI").
    static constexpr int32_t kApplicationId = 0x50524c49;

    // The index file of the store open on `storeDb`; empty for a store in memory.
    static std::string pathFor(sqlite3* storeDb);

    // A store file gets a connection of its own (to `storeUri`, opened with `openFlags`) with the
    // index attached: attached to the store's connection, the index would be write-locked by
    // every BEGIN IMMEDIATE of the row writer. A store in memory keeps its index in memory on
    // the store's own connection. Creates the index file when missing; throws StoreError naming
    // the file when it is damaged, of another program or of a newer Parallax.
    LogIndex(sqlite3* storeDb, const std::string& storeUri, int openFlags, int busyTimeoutMs);
    ~LogIndex();
    LogIndex(const LogIndex&) = delete;
    LogIndex& operator=(const LogIndex&) = delete;

    const std::string& path() const { return m_path; }
    // The connection that sees both `main` (the store) and `logindex`.
    sqlite3* db() const { return m_db; }
    // A statement on that connection, prepared once and cached by its SQL text.
    SqlStatement& get(const std::string& sql);
    void setBusyTimeout(int milliseconds);

    // Indexes `run`'s lines that are not yet in the index, in transactions of at most `batch`
    // lines; stops once `maxLines` are indexed (< 0: no limit). Returns whether the run is caught
    // up.
    bool catchUp(int64_t run, int64_t maxLines = -1, int64_t batch = kBatchLines);
    // Catches up every run that has lines not yet in the index.
    void catchUpAll();
    // Removes `run`'s lines from the index, then calls `deleteRows` (which deletes them from the
    // store) while the index stays locked, so that no search re-indexes them in between.
    void forgetRun(int64_t run, const std::function<void()>& deleteRows);

    // Rethrows `e` (an error of a statement on this connection) naming the index file and the
    // fix when SQLite found the file damaged; otherwise rethrows it as it is.
    [[noreturn]] void rethrow(const StoreError& e) const;

    // Lines per transaction: large batches write fewer, larger segments (less merging later),
    // small enough that a search waiting for the index's write lock waits a fraction of a second.
    static constexpr int64_t kBatchLines = 50000;

private:
    class WriteTransaction;
    void attach();
    void checkConsistency();

    sqlite3* m_db = nullptr;
    bool m_ownsDb = false;
    std::string m_path; // the index file, or ":memory:"
    std::unordered_map<std::string, SqlStatement> m_cache;
};

} // namespace parallax

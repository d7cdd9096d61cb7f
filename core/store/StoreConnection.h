#pragma once

#include "core/store/SqlStatement.h"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

struct sqlite3;

namespace parallax {

// The store's SQLite connection, shared by RunStore's parts: opened, identified and migrated on
// construction (StoreSetup.h), closed on destruction. Statements whose SQL is built at run time are
// prepared once and cached by their text; the parts keep their hot-path statements themselves.
class StoreConnection {
public:
    // Throws StoreError naming the file and the fix (see RunStore's constructor).
    explicit StoreConnection(const std::string& path);
    ~StoreConnection();
    StoreConnection(const StoreConnection&) = delete;
    StoreConnection& operator=(const StoreConnection&) = delete;

    sqlite3* db() const { return m_db; }
    const std::string& path() const { return m_path; }
    // What sqlite3_open_v2 was given: the path, or a URI for a read-only file; and its flags.
    const std::string& openUri() const { return m_openUri; }
    int openFlags() const { return m_openFlags; }
    bool openedReadOnly() const;
    int busyTimeoutMs() const { return m_busyTimeoutMs; }
    void setBusyTimeout(int milliseconds);

    // A statement prepared on first use and kept, by its SQL text. The reference stays valid
    // until the next get(): take it again rather than keep it across calls.
    SqlStatement& get(const std::string& sql);
    // A statement prepared now and owned by the caller (for the hot paths).
    SqlStatement prepare(const std::string& sql) const { return SqlStatement(m_db, sql, m_path); }

    // Transactions are IMMEDIATE: the write lock is taken at begin, waiting up to the busy timeout.
    void begin();
    void commit();
    void rollback(); // a no-op outside a transaction
    bool inTransaction() const;

    // Runs the cached statement `sql` with `values` bound in order, ignoring any rows.
    void execute(const std::string& sql, const std::vector<SqlStatement::Value>& values);

    // Throws "store PATH: WHAT: run ID does not exist" when the last UPDATE or DELETE changed nothing.
    void requireChanged(int64_t id, const char* what) const;
    int64_t lastInsertId() const;
    int changes() const;

private:
    sqlite3* m_db = nullptr;
    std::string m_path;
    std::string m_openUri;
    int m_openFlags = 0;
    int m_busyTimeoutMs = 0;
    SqlStatement m_begin, m_commit, m_rollback;
    std::unordered_map<std::string, SqlStatement> m_cache;
};

// A transaction around a write unless the caller already holds one, so that a write of several
// statements is all or nothing either way.
class ImplicitTransaction {
public:
    explicit ImplicitTransaction(StoreConnection& connection);
    ~ImplicitTransaction();
    ImplicitTransaction(const ImplicitTransaction&) = delete;
    ImplicitTransaction& operator=(const ImplicitTransaction&) = delete;
    void commit();

private:
    StoreConnection& m_connection;
    bool m_own;
    bool m_done = false;
};

// Seconds since the epoch: the times the store records itself (a run created, ended, found lost).
double nowSeconds();

} // namespace parallax

#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace parallax {

// A prepared statement that stays prepared for the life of its connection. Strings are bound
// without a copy (SQLITE_STATIC): the caller keeps them alive until the statement is reset, which
// every use does through a Use guard before returning.
class SqlStatement {
public:
    SqlStatement() = default;
    SqlStatement(sqlite3* db, const std::string& sql, const std::string& storePath);
    ~SqlStatement();
    SqlStatement(SqlStatement&& other) noexcept;
    SqlStatement& operator=(SqlStatement&& other) noexcept;
    SqlStatement(const SqlStatement&) = delete;
    SqlStatement& operator=(const SqlStatement&) = delete;

    // Resets the statement when it goes out of scope, so that a read never keeps its snapshot
    // (and with it the WAL file) alive after the call that made it, even when that call throws.
    class Use {
    public:
        explicit Use(SqlStatement& s) : m_s(s) {}
        ~Use() { m_s.reset(); }
        Use(const Use&) = delete;
        Use& operator=(const Use&) = delete;
    private:
        SqlStatement& m_s;
    };

    // Parameters are 1-based, as in SQLite.
    void bind(int i, int64_t v);
    void bind(int i, int v) { bind(i, static_cast<int64_t>(v)); }
    void bind(int i, double v);
    void bind(int i, const std::string& v); // the string must outlive the statement's use
    void bindBlob(int i, const std::string& bytes); // likewise
    void bindCopy(int i, const std::string& v); // copied: the string may go before the statement runs
    void bindNull(int i);
    void bind(int i, const std::optional<int64_t>& v);
    void bind(int i, const std::optional<double>& v);

    // For statements whose SQL is assembled from parts: values in the order of their '?'.
    using Value = std::variant<int64_t, double, std::string>;
    void bindAll(const std::vector<Value>& values); // strings must outlive the statement's use

    // true while a row is available; false when done. Throws StoreError on failure.
    bool step();
    // Runs a statement that returns no rows (or whose rows are ignored) and resets it.
    void run();
    void reset();

    bool isNull(int col) const;
    int64_t int64(int col) const;
    double real(int col) const;
    // REAL columns store NaN as NULL (SQLite has no NaN); this reads NULL back as NaN.
    double realOrNaN(int col) const;
    std::optional<int64_t> optInt64(int col) const;
    std::optional<double> optReal(int col) const;
    std::string text(int col) const;
    // A BLOB column's bytes, valid until the next step() or reset().
    const void* blob(int col) const;
    size_t blobSize(int col) const;

    sqlite3_stmt* handle() const { return m_stmt; }

private:
    [[noreturn]] void fail(int rc, const char* what) const;
    sqlite3* m_db = nullptr;
    sqlite3_stmt* m_stmt = nullptr;
    std::string m_path;
};

} // namespace parallax

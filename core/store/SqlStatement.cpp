#include "core/store/SqlStatement.h"

#include "core/store/StoreHealth.h"
#include "core/store/StoreTypes.h"

#include <sqlite3.h>

#include <limits>
#include <utility>

namespace parallax {

SqlStatement::SqlStatement(sqlite3* db, const std::string& sql, const std::string& storePath)
    : m_db(db), m_path(storePath) {
    const int rc = sqlite3_prepare_v3(db, sql.c_str(), static_cast<int>(sql.size()),
                                      SQLITE_PREPARE_PERSISTENT, &m_stmt, nullptr);
    if (rc != SQLITE_OK) {
        throw StoreError("store " + m_path + ": cannot prepare statement (" +
                         std::string(sqlite3_errmsg(db)) + "): " + sql);
    }
}

SqlStatement::~SqlStatement() {
    if (m_stmt) sqlite3_finalize(m_stmt);
}

SqlStatement::SqlStatement(SqlStatement&& other) noexcept
    : m_db(other.m_db), m_stmt(std::exchange(other.m_stmt, nullptr)),
      m_path(std::move(other.m_path)) {}

SqlStatement& SqlStatement::operator=(SqlStatement&& other) noexcept {
    if (this != &other) {
        if (m_stmt) sqlite3_finalize(m_stmt);
        m_db = other.m_db;
        m_stmt = std::exchange(other.m_stmt, nullptr);
        m_path = std::move(other.m_path);
    }
    return *this;
}

void SqlStatement::fail(int rc, const char* what) const {
    throwIfDamaged(sqlite3_extended_errcode(m_db), m_path, what, sqlite3_errmsg(m_db));
    std::string msg = "store " + m_path + ": " + what + ": " + sqlite3_errmsg(m_db);
    switch (rc & 0xff) {
    case SQLITE_BUSY:
        msg += " (another process kept the store locked longer than the busy timeout; retry, or"
               " check for a stuck process holding it)";
        break;
    case SQLITE_FULL:
        msg += " (the disk is full; free space or use another --store path)";
        break;
    case SQLITE_READONLY:
        msg += " (the store is read-only; check the file's permissions)";
        break;
    default:
        break;
    }
    if (m_stmt) {
        if (const char* sql = sqlite3_sql(m_stmt)) msg += std::string(" [") + sql + "]";
    }
    throw StoreError(msg);
}

void SqlStatement::bind(int i, int64_t v) {
    const int rc = sqlite3_bind_int64(m_stmt, i, v);
    if (rc != SQLITE_OK) fail(rc, "cannot bind a parameter");
}

void SqlStatement::bind(int i, double v) {
    const int rc = sqlite3_bind_double(m_stmt, i, v);
    if (rc != SQLITE_OK) fail(rc, "cannot bind a parameter");
}

void SqlStatement::bind(int i, const std::string& v) {
    const int rc = sqlite3_bind_text(m_stmt, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
    if (rc != SQLITE_OK) fail(rc, "cannot bind a parameter");
}

void SqlStatement::bindCopy(int i, const std::string& v) {
    const int rc = sqlite3_bind_text(m_stmt, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    if (rc != SQLITE_OK) fail(rc, "cannot bind a parameter");
}

void SqlStatement::bindBlob(int i, const std::string& bytes) {
    const int rc = sqlite3_bind_blob(m_stmt, i, bytes.data(), static_cast<int>(bytes.size()), SQLITE_STATIC);
    if (rc != SQLITE_OK) fail(rc, "cannot bind a parameter");
}

const void* SqlStatement::blob(int col) const {
    return sqlite3_column_blob(m_stmt, col);
}

size_t SqlStatement::blobSize(int col) const {
    return static_cast<size_t>(sqlite3_column_bytes(m_stmt, col));
}

void SqlStatement::bindNull(int i) {
    const int rc = sqlite3_bind_null(m_stmt, i);
    if (rc != SQLITE_OK) fail(rc, "cannot bind a parameter");
}

void SqlStatement::bind(int i, const std::optional<int64_t>& v) {
    if (v) bind(i, *v);
    else bindNull(i);
}

void SqlStatement::bind(int i, const std::optional<double>& v) {
    if (v) bind(i, *v);
    else bindNull(i);
}

void SqlStatement::bindAll(const std::vector<Value>& values) {
    int i = 1;
    for (const Value& v : values) {
        std::visit([&](const auto& x) { bind(i, x); }, v);
        ++i;
    }
}

bool SqlStatement::step() {
    const int rc = sqlite3_step(m_stmt);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(rc, "statement failed");
}

void SqlStatement::run() {
    Use use(*this);
    while (step()) {
    }
}

void SqlStatement::reset() {
    if (m_stmt) sqlite3_reset(m_stmt);
}

bool SqlStatement::isNull(int col) const {
    return sqlite3_column_type(m_stmt, col) == SQLITE_NULL;
}

int64_t SqlStatement::int64(int col) const { return sqlite3_column_int64(m_stmt, col); }

double SqlStatement::real(int col) const { return sqlite3_column_double(m_stmt, col); }

double SqlStatement::realOrNaN(int col) const {
    return isNull(col) ? std::numeric_limits<double>::quiet_NaN() : real(col);
}

std::optional<int64_t> SqlStatement::optInt64(int col) const {
    if (isNull(col)) return std::nullopt;
    return int64(col);
}

std::optional<double> SqlStatement::optReal(int col) const {
    if (isNull(col)) return std::nullopt;
    return real(col);
}

std::string SqlStatement::text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(m_stmt, col));
    if (!p) return {};
    return std::string(p, static_cast<size_t>(sqlite3_column_bytes(m_stmt, col)));
}

} // namespace parallax

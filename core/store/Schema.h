#pragma once

#include <cstdint>
#include <string>
#include <vector>

struct sqlite3;

namespace parallax {

// One step of the store's schema history. A database records the last step applied in
// PRAGMA user_version; version 0 is an empty file.
struct SchemaMigration {
    int version;             // user_version after this step
    std::string description; // named in errors
    std::string sql;         // one or more statements
};

// PRAGMA application_id of every Parallax store ("PRLX"), so that a SQLite file written by
// another program is recognized as such instead of being migrated.
inline constexpr int32_t kStoreApplicationId = 0x50524c58;

// The store's migrations in order; the last one's version is RunStore::kSchemaVersion.
const std::vector<SchemaMigration>& storeMigrations();

// Applies every step of `steps` whose version is above the database's user_version, each in its
// own IMMEDIATE transaction that also sets user_version (and the application id), so a failed
// step leaves the database at the previous version. Safe when several processes open a new store
// at once: each step re-reads user_version once it holds the write lock. Throws StoreError naming
// `path` and the step.
void applyMigrations(sqlite3* db, const std::string& path, const std::vector<SchemaMigration>& steps);

} // namespace parallax

#pragma once

#include <string>

struct sqlite3;

namespace parallax {

// Before a store file is opened: refuses an empty file (SQLite would make it a store silently, over
// whatever it was meant to be) and makes a store that others can read its owner's alone, as a new
// one is (a run's spec may name secrets). Nothing happens where `path` is no regular file.
void checkStoreFile(const std::string& path);

// `path` as the path of a file: URI, with the characters that URIs reserve escaped.
std::string fileUriPath(const std::string& path);

// Identifies the database open on `db` as a Parallax store (or an empty file), configures the
// connection (WAL, synchronous, caches) and brings the schema up to date: the migrations of
// Schema.h, then the generated tables of EventTables.h. A read-only store is only identified: it
// must be current already. Throws StoreError naming `path` and the fix; StoreDamaged when SQLite
// finds the file damaged.
void setUpStore(sqlite3* db, const std::string& path, int busyTimeoutMs);

} // namespace parallax

#pragma once

#include <string>

struct sqlite3;

namespace parallax {

// Before a store file is opened: refuses an empty file (SQLite would make it a store silently, over
// whatever it was meant to be) and makes a store that others can read its owner's alone, as a new
// one is (a run's spec may name secrets). Nothing happens where `path` is no regular file.
void checkStoreFile(const std::string& path);

// Where `path` does not exist: makes the store whole under a name of its own beside it (set up,
// closed, its WAL folded in), then links it to `path`, so that processes opening `path` at once never
// find it empty or half made; when another made it first, leaves theirs. Where the folder does not
// let it (read-only, no hard links), leaves `path` to be created by opening it, as before.
void createStoreWhole(const std::string& path, int openFlags, int busyTimeoutMs);

// `path` as the path of a file: URI, with the characters that URIs reserve escaped.
std::string fileUriPath(const std::string& path);

// Identifies the database open on `db` as a Parallax store (or an empty file), configures the
// connection (WAL, synchronous, caches) and brings the schema up to date: the migrations of
// Schema.h, then the generated tables of EventTables.h. A read-only store is only identified: it
// must be current already. Throws StoreError naming `path` and the fix; StoreDamaged when SQLite
// finds the file damaged.
void setUpStore(sqlite3* db, const std::string& path, int busyTimeoutMs);

} // namespace parallax

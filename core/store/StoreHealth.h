#pragma once

#include <string>
#include <vector>

struct sqlite3;

namespace parallax {

// Whether an SQLite result code means the store's file is damaged or its disk fails (CORRUPT,
// NOTADB, IOERR and their extended codes): errors that no retry cures.
bool isDamageCode(int sqliteCode);

// Throws StoreDamaged with `what`, SQLite's message and the recovery hint when `sqliteCode` is a
// damage code; returns otherwise.
void throwIfDamaged(int sqliteCode, const std::string& path, const std::string& what, const std::string& message);

// PRAGMA quick_check of the connection's main database: the problems it finds (at most `limit`),
// none when the file is sound. Reads every page, so it takes time in proportion to the file.
// Throws StoreDamaged when the check itself cannot read the file.
std::vector<std::string> quickCheck(sqlite3* db, const std::string& path, int limit = 5);

} // namespace parallax

#include "core/store/StoreHealth.h"

#include "core/store/StoreTypes.h"

#include <sqlite3.h>

namespace parallax {

std::string damagedStoreHint(const std::string& path) {
    return "nothing more is written to it. Move " + path +
           " aside (keep it: it may still be read), then bring its runs into a new store from their folders, "
           "which keep each run's spec and whole output: parallax-cli --store NEW.db import " + path +
           ".runs (or one run's folder)";
}

bool isDamageCode(int sqliteCode) {
    const int primary = sqliteCode & 0xff;
    return primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB || primary == SQLITE_IOERR;
}

void throwIfDamaged(int sqliteCode, const std::string& path, const std::string& what, const std::string& message) {
    if (!isDamageCode(sqliteCode)) return;
    const bool io = (sqliteCode & 0xff) == SQLITE_IOERR;
    throw StoreDamaged("store " + path + (io ? " cannot be read or written (" : " is damaged (") + message + "; " +
                       what + "): " + damagedStoreHint(path));
}

std::vector<std::string> quickCheck(sqlite3* db, const std::string& path, int limit) {
    const std::string sql = "PRAGMA quick_check(" + std::to_string(limit > 0 ? limit : 1) + ")";
    sqlite3_stmt* st = nullptr;
    int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr);
    std::vector<std::string> problems;
    while (rc == SQLITE_OK || rc == SQLITE_ROW) {
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW) break;
        const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
        const std::string line = text ? text : "";
        if (line != "ok") problems.push_back(line);
    }
    const int code = sqlite3_extended_errcode(db);
    const std::string message = sqlite3_errmsg(db);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        throwIfDamaged(code, path, "PRAGMA quick_check could not read it", message);
        throw StoreError("store " + path + ": cannot check it (PRAGMA quick_check): " + message);
    }
    return problems;
}

} // namespace parallax

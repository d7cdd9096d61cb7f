#pragma once

#include <cstddef>
#include <string>

// Pieces of SQL text the store's parts assemble statements from. Only placeholders are pasted:
// every value is bound.
namespace parallax::sql {

// Rows per statement of the batch inserts: one statement of 16 rows costs about half as much per
// row as 16 statements (measured with bench_store); more rows per statement gain nothing more.
inline constexpr int kRowsPerInsert = 16;

// "?,?,?": `n` positional parameters.
inline std::string placeholders(size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s += i ? ",?" : "?";
    return s;
}

// " VALUES (?,?),(?,?)": `rows` groups of `columns` parameters.
inline std::string valuesList(int columns, int rows) {
    const std::string group = "(" + placeholders(static_cast<size_t>(columns)) + ")";
    std::string out = " VALUES ";
    for (int r = 0; r < rows; ++r) out += (r ? "," : "") + group;
    return out;
}

} // namespace parallax::sql

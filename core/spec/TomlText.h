#pragma once

// TOML text of values and tables, shared by the spec reader, writer and comparison (internal to
// parallax_spec: it exposes toml++ types).

#include <toml++/toml.h>

#include <cstdint>
#include <string>

namespace parallax {

std::string tomlKey(const std::string& key);       // bare when possible, else a quoted key
std::string tomlString(const std::string& value);  // basic string with escapes
// Shortest text that reads back to the same double (3e-04, 0.1, 25.0, inf, nan).
std::string tomlDouble(double value);
// One value inline: scalars, arrays and tables as inline arrays / inline tables.
std::string tomlInline(const toml::node& node);
// "string \"ten\"", "float 2.5", "table": how a wrong value is shown in an error.
std::string describeNode(const toml::node& node);

// Appends `table` in block form: its key/value pairs, then its sub-tables as [prefix.key]
// sections and its arrays of tables as [[prefix.key]] entries. `prefix` is the dotted path of
// `table` ("" for the document root), already in TOML key syntax.
void appendTable(std::string& out, const toml::table& table, const std::string& prefix);
// Only the key/value pairs of `table` (no sub-tables, no arrays of tables).
void appendKeyValues(std::string& out, const toml::table& table);
// Only the sub-tables and arrays of tables of `table`, under `prefix`.
void appendSubTables(std::string& out, const toml::table& table, const std::string& prefix);
// True for sub-tables and arrays of tables written in block form (as headers), false for values
// written on one line.
bool isBlockNode(const toml::node& node);

} // namespace parallax

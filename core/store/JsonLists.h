#pragma once

#include <cstdint>
#include <string>
#include <vector>

// Lists the store keeps as JSON arrays in TEXT columns: a run's hosts and tags, and the list fields
// of events kept in generated tables (EventTables.h).
namespace parallax::json_lists {

// Text from a person or a worker may not be valid UTF-8; JSON must be, so bad bytes become U+FFFD
// instead of failing the write.
std::string text(const std::vector<std::string>& items);
// NaN and infinities are written as null (JSON has neither) and read back as NaN.
std::string text(const std::vector<double>& items);
std::string text(const std::vector<int64_t>& items);

// A run's tags or hosts: an empty list for "" or "[]"; text that is not a JSON array (edited by
// hand?) is kept as one item rather than lost.
std::vector<std::string> stringsOrText(const std::string& text);

// An event's list: empty for NULL (""), for anything that is not a JSON array, and without the
// items of another type.
void read(const std::string& text, std::vector<std::string>& out);
void read(const std::string& text, std::vector<double>& out);
void read(const std::string& text, std::vector<int64_t>& out);

} // namespace parallax::json_lists

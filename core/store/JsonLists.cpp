#include "core/store/JsonLists.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

namespace parallax::json_lists {

namespace {

using nlohmann::json;

std::string dumped(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json parsedArray(const std::string& text) {
    if (text.empty()) return json::array();
    json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    return j.is_array() ? j : json::array();
}

} // namespace

std::string text(const std::vector<std::string>& items) { return dumped(json(items)); }

std::string text(const std::vector<double>& items) {
    json j = json::array();
    for (double v : items) j.push_back(std::isfinite(v) ? json(v) : json(nullptr));
    return dumped(j);
}

std::string text(const std::vector<int64_t>& items) { return dumped(json(items)); }

std::vector<std::string> stringsOrText(const std::string& text) {
    std::vector<std::string> out;
    if (text.empty() || text == "[]") return out; // most runs: no tags
    const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_array()) {
        for (const auto& v : j) {
            if (v.is_string()) out.push_back(v.get<std::string>());
        }
    } else {
        // Not written by Parallax (edited by hand?): keep the text rather than lose it.
        out.push_back(text);
    }
    return out;
}

void read(const std::string& text, std::vector<std::string>& out) {
    out.clear();
    for (const json& v : parsedArray(text))
        if (v.is_string()) out.push_back(v.get<std::string>());
}

void read(const std::string& text, std::vector<double>& out) {
    out.clear();
    for (const json& v : parsedArray(text)) {
        if (v.is_number()) out.push_back(v.get<double>());
        else if (v.is_null()) out.push_back(std::numeric_limits<double>::quiet_NaN());
    }
}

void read(const std::string& text, std::vector<int64_t>& out) {
    out.clear();
    for (const json& v : parsedArray(text))
        if (v.is_number_integer()) out.push_back(v.get<int64_t>());
}

} // namespace parallax::json_lists

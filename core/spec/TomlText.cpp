#include "core/spec/TomlText.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace parallax {

std::string tomlKey(const std::string& key) {
    bool bare = !key.empty();
    for (char c : key) {
        const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        if (!ok) bare = false;
    }
    return bare ? key : tomlString(key);
}

std::string tomlString(const std::string& value) {
    std::string out = "\"";
    for (char ch : value) {
        const auto c = static_cast<unsigned char>(ch);
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        case '\r': out += "\\r"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
            if (c < 0x20 || c == 0x7f) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04X", static_cast<unsigned>(c));
                out += buf;
            } else {
                out += ch; // UTF-8 passes through unchanged
            }
        }
    }
    return out + "\"";
}

std::string tomlDouble(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    char buf[64];
    const auto result = std::to_chars(buf, buf + sizeof buf, value); // shortest round-trip form
    std::string text(buf, result.ptr);
    // A TOML float needs a fraction or an exponent, else it reads back as an integer.
    if (text.find_first_of(".e") == std::string::npos) text += ".0";
    return text;
}

std::string tomlInline(const toml::node& node) {
    switch (node.type()) {
    case toml::node_type::string: return tomlString(node.as_string()->get());
    case toml::node_type::integer: return std::to_string(node.as_integer()->get());
    case toml::node_type::floating_point: return tomlDouble(node.as_floating_point()->get());
    case toml::node_type::boolean: return node.as_boolean()->get() ? "true" : "false";
    case toml::node_type::date: {
        std::ostringstream s;
        s << *node.as_date();
        return s.str();
    }
    case toml::node_type::time: {
        std::ostringstream s;
        s << *node.as_time();
        return s.str();
    }
    case toml::node_type::date_time: {
        std::ostringstream s;
        s << *node.as_date_time();
        return s.str();
    }
    case toml::node_type::array: {
        const toml::array& a = *node.as_array();
        std::string out = "[";
        for (size_t i = 0; i < a.size(); ++i) out += (i ? ", " : "") + tomlInline(a[i]);
        return out + "]";
    }
    case toml::node_type::table: {
        const toml::table& t = *node.as_table();
        if (t.empty()) return "{}";
        std::string out = "{ ";
        bool first = true;
        for (auto&& [k, v] : t) {
            out += (first ? "" : ", ") + tomlKey(std::string(k.str())) + " = " + tomlInline(v);
            first = false;
        }
        return out + " }";
    }
    case toml::node_type::none: break;
    }
    return "";
}

std::string describeNode(const toml::node& node) {
    switch (node.type()) {
    case toml::node_type::string: return "string " + tomlInline(node);
    case toml::node_type::integer: return "integer " + tomlInline(node);
    case toml::node_type::floating_point: return "float " + tomlInline(node);
    case toml::node_type::boolean: return "boolean " + tomlInline(node);
    case toml::node_type::date: return "date " + tomlInline(node);
    case toml::node_type::time: return "time " + tomlInline(node);
    case toml::node_type::date_time: return "date-time " + tomlInline(node);
    case toml::node_type::array: return "array " + tomlInline(node);
    case toml::node_type::table: return "table";
    case toml::node_type::none: break;
    }
    return "nothing";
}

bool isBlockNode(const toml::node& node) {
    if (const toml::table* t = node.as_table()) return !t->is_inline();
    if (const toml::array* a = node.as_array()) {
        if (a->empty()) return false;
        for (const toml::node& e : *a) {
            const toml::table* t = e.as_table();
            if (!t || t->is_inline()) return false;
        }
        return true;
    }
    return false;
}

void appendKeyValues(std::string& out, const toml::table& table) {
    for (auto&& [k, v] : table)
        if (!isBlockNode(v)) out += tomlKey(std::string(k.str())) + " = " + tomlInline(v) + "\n";
}

void appendSubTables(std::string& out, const toml::table& table, const std::string& prefix) {
    for (auto&& [k, v] : table) {
        if (!isBlockNode(v)) continue;
        const std::string path = (prefix.empty() ? "" : prefix + ".") + tomlKey(std::string(k.str()));
        if (const toml::table* sub = v.as_table()) {
            appendTable(out, *sub, path);
        } else {
            for (const toml::node& e : *v.as_array()) {
                out += "\n[[" + path + "]]\n";
                appendKeyValues(out, *e.as_table());
                appendSubTables(out, *e.as_table(), path);
            }
        }
    }
}

void appendTable(std::string& out, const toml::table& table, const std::string& prefix) {
    bool hasValues = false;
    for (auto&& [k, v] : table)
        if (!isBlockNode(v)) hasValues = true;
    // A table that holds only sub-tables needs no header of its own; an empty one does, or it
    // would be lost.
    if (!prefix.empty() && (hasValues || table.empty())) out += "\n[" + prefix + "]\n";
    appendKeyValues(out, table);
    appendSubTables(out, table, prefix);
}

} // namespace parallax

#include "core/formats/JsonFields.h"

#include "core/formats/FormatError.h"

#include <charconv>

namespace parallax {

JsonFields::JsonFields(std::string_view text, std::string file, std::string what)
    : m_text(text), m_reader(text), m_file(std::move(file)), m_what(std::move(what)) {}

void JsonFields::check(bool ok) {
    if (!ok) throw FormatError(m_file, m_what + " is not valid JSON: " + m_reader.error());
}

std::string JsonFields::kindOfNext() {
    const JsonReader::Type type = m_reader.peek();
    if (type == JsonReader::Type::End) return "missing";
    if (type == JsonReader::Type::Invalid) return "not JSON";
    return JsonReader::typeName(type);
}

void JsonFields::members(const std::function<void(const std::string&)>& member) {
    if (m_reader.peek() != JsonReader::Type::Object)
        throw FormatError(m_file, m_what + " holds " + kindOfNext() + " where an object belongs");
    check(m_reader.expect('{'));
    if (m_reader.accept('}')) return;
    for (;;) {
        std::string key;
        check(m_reader.readString(key));
        check(m_reader.expect(':'));
        member(key);
        if (m_reader.accept(',')) continue;
        check(m_reader.expect('}'));
        return;
    }
}

void JsonFields::items(const std::function<void()>& item) {
    if (m_reader.peek() != JsonReader::Type::Array)
        throw FormatError(m_file, m_what + " holds " + kindOfNext() + " where an array belongs");
    check(m_reader.expect('['));
    if (m_reader.accept(']')) return;
    for (;;) {
        item();
        if (m_reader.accept(',')) continue;
        check(m_reader.expect(']'));
        return;
    }
}

std::string JsonFields::string() {
    std::string out;
    check(m_reader.readString(out));
    return out;
}

std::optional<uint64_t> JsonFields::count(std::string& problem) {
    if (m_reader.peek() != JsonReader::Type::Number) {
        problem = kindOfNext(); // left unread: a deep array here would only fail as nested too deep
        return std::nullopt;
    }
    const size_t begin = m_reader.position();
    size_t end = begin;
    while (end < m_text.size() && m_text[end] >= '0' && m_text[end] <= '9') ++end;
    skip(); // checks the number's grammar and moves past it
    if (m_text[begin] == '-') {
        problem = "negative";
        return std::nullopt;
    }
    if (m_reader.position() != end) {
        problem = "not a whole number";
        return std::nullopt;
    }
    uint64_t value = 0;
    const auto r = std::from_chars(m_text.data() + begin, m_text.data() + end, value);
    if (r.ec != std::errc()) {
        problem = "too large";
        return std::nullopt;
    }
    return value;
}

void JsonFields::skip() {
    check(m_reader.skipValue());
}

void JsonFields::end() {
    if (!m_reader.atEnd())
        throw FormatError(m_file, m_what + " goes on after its JSON value, at byte " +
                                      std::to_string(m_reader.position()) + " (only spaces may follow)");
}

} // namespace parallax

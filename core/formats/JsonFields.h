#pragma once

#include "core/telemetry/JsonReader.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace parallax {

// The JSON of model files (safetensors headers, their index, config.json) read over JsonReader:
// no recursion beyond JsonReader's depth limit, nothing allocated but the strings read, and every
// syntax error thrown as a FormatError naming the file, e.g. "<file>: the header is not valid JSON:
// expected ',' at byte 57".
class JsonFields {
public:
    // `what` names the text in messages: "the header", "the index".
    JsonFields(std::string_view text, std::string file, std::string what);

    const std::string& file() const { return m_file; }
    JsonReader::Type peek() { return m_reader.peek(); }
    // The next value's kind as a message says it: "a string", "an array", "null", ...
    std::string kindOfNext();

    // Calls member(key) for each member of the object that comes next; member must consume the
    // value. Throws FormatError when no object comes next or on a syntax error.
    void members(const std::function<void(const std::string& key)>& member);
    // Calls item() for each element of the array that comes next; item must consume it.
    void items(const std::function<void()>& item);
    // The string that comes next (the caller checks peek() first to word its own error).
    std::string string();
    // A non-negative integer written as digits ("12"). Anything else gives nullopt, with `problem`
    // saying what it is: "a string", "negative", "not a whole number", "too large"; a number is
    // consumed, any other value left unread (the caller is expected to give up).
    std::optional<uint64_t> count(std::string& problem);
    void skip();
    // Only whitespace may follow the value read.
    void end();

private:
    void check(bool ok);
    std::string_view m_text;
    JsonReader m_reader;
    std::string m_file;
    std::string m_what;
};

} // namespace parallax

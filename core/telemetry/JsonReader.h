#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace parallax {

// A pull reader over one JSON text, written for the telemetry decoder: it never allocates except
// for decoded strings, never recurses deeper than kMaxDepth, and reports the first problem with
// its byte offset. Besides strict JSON it accepts the bare NaN, Infinity and -Infinity tokens that
// Python's json module writes for non-finite floats.
class JsonReader {
public:
    enum class Type { Object, Array, String, Number, True, False, Null, NonFinite, End, Invalid };
    static constexpr int kMaxDepth = 64;

    explicit JsonReader(std::string_view text, size_t offset = 0) : m_text(text), m_pos(offset) {}

    size_t position() const { return m_pos; }
    bool failed() const { return !m_error.empty(); }
    const std::string& error() const { return m_error; }

    // The hot helpers are inline: the decoder calls them a few dozen times per line.
    void skipWhitespace() {
        while (m_pos < m_text.size()) {
            const char c = m_text[m_pos];
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
                break;
            ++m_pos;
        }
    }
    // The type of the value that starts at the current position (after whitespace).
    Type peek() {
        skipWhitespace();
        if (m_pos >= m_text.size())
            return Type::End;
        const char c = m_text[m_pos];
        if (c == '"')
            return Type::String;
        if ((c >= '0' && c <= '9') || (c == '-' && m_text.compare(m_pos, 9, "-Infinity") != 0))
            return Type::Number;
        return peekOther();
    }
    // Consumes `c` (after whitespace) or records an error naming what was expected.
    bool expect(char c) {
        skipWhitespace();
        if (m_pos < m_text.size() && m_text[m_pos] == c) {
            ++m_pos;
            return true;
        }
        return expected(c);
    }
    // Consumes `c` (after whitespace) when it is next; no error otherwise.
    bool accept(char c) {
        skipWhitespace();
        if (m_pos < m_text.size() && m_text[m_pos] == c) {
            ++m_pos;
            return true;
        }
        return false;
    }
    bool atEnd() {
        skipWhitespace();
        return m_pos >= m_text.size();
    }

    // A string; `out` receives the unescaped UTF-8 text. Lone surrogates become U+FFFD.
    bool readString(std::string& out);
    // A string without a copy when it has no escapes; else unescaped into `scratch`.
    bool readStringView(std::string_view& out, std::string& scratch);
    // A number token (or NaN/Infinity/-Infinity) as a double; out-of-range magnitudes become +-inf.
    bool readDouble(double& out);
    // A number with an integral value that fits in int64 ("3", "3.0", "3e2"); anything else fails.
    bool readInt64(int64_t& out);
    // The same, but a well-formed number that is no such integer is not a JSON error: it is read,
    // and `problem` says why it does not fit ("a fraction", "out of range").
    bool readInt64(int64_t& out, const char*& problem);
    // Any value, validated and skipped.
    bool skipValue();

    bool fail(std::string message);
    // A type as a message names it: "an object", "a number", "nothing" (End), "an invalid value".
    static const char* typeName(Type type);

private:
    Type peekOther();
    bool expected(char c);
    bool skipValue(int depth);
    bool scanNumber(size_t& end, bool& integral);
    bool readHex4(uint32_t& out);

    std::string_view m_text;
    size_t m_pos = 0;
    std::string m_error;
};

} // namespace parallax

#include "core/telemetry/JsonReader.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace parallax {

namespace {

bool isDigit(char c) { return c >= '0' && c <= '9'; }

void appendUtf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

constexpr uint32_t kReplacement = 0xFFFD;

} // namespace

const char* JsonReader::typeName(Type type) {
    switch (type) {
    case Type::Object: return "an object";
    case Type::Array: return "an array";
    case Type::String: return "a string";
    case Type::Number: return "a number";
    case Type::True:
    case Type::False: return "a boolean";
    case Type::Null: return "null";
    case Type::NonFinite: return "a non-finite number";
    case Type::End: return "nothing";
    case Type::Invalid: break;
    }
    return "an invalid value";
}

bool JsonReader::fail(std::string message) {
    if (m_error.empty())
        m_error = std::move(message);
    return false;
}

JsonReader::Type JsonReader::peekOther() {
    const std::string_view rest = m_text.substr(m_pos);
    switch (rest[0]) {
    case '{': return Type::Object;
    case '[': return Type::Array;
    case 't': return rest.substr(0, 4) == "true" ? Type::True : Type::Invalid;
    case 'f': return rest.substr(0, 5) == "false" ? Type::False : Type::Invalid;
    case 'n': return rest.substr(0, 4) == "null" ? Type::Null : Type::Invalid;
    case 'N': return rest.substr(0, 3) == "NaN" ? Type::NonFinite : Type::Invalid;
    case 'I': return rest.substr(0, 8) == "Infinity" ? Type::NonFinite : Type::Invalid;
    case '-': return rest.substr(0, 9) == "-Infinity" ? Type::NonFinite : Type::Number;
    default: return Type::Invalid;
    }
}

bool JsonReader::expected(char c) {
    if (m_pos >= m_text.size())
        return fail(std::string("truncated: line ends where '") + c + "' was expected");
    return fail(std::string("expected '") + c + "' at byte " + std::to_string(m_pos));
}

bool JsonReader::readHex4(uint32_t& out) {
    if (m_pos + 4 > m_text.size())
        return fail("truncated: line ends inside a \\u escape");
    out = 0;
    for (int i = 0; i < 4; ++i) {
        const char c = m_text[m_pos++];
        out <<= 4;
        if (c >= '0' && c <= '9')
            out |= static_cast<uint32_t>(c - '0');
        else if (c >= 'a' && c <= 'f')
            out |= static_cast<uint32_t>(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            out |= static_cast<uint32_t>(c - 'A' + 10);
        else
            return fail("bad \\u escape at byte " + std::to_string(m_pos - 1));
    }
    return true;
}

bool JsonReader::readStringView(std::string_view& out, std::string& scratch) {
    skipWhitespace();
    if (m_pos >= m_text.size() || m_text[m_pos] != '"')
        return fail("expected a string at byte " + std::to_string(m_pos));
    const size_t begin = ++m_pos;
    // Fast path: no escapes, no control characters.
    size_t i = begin;
    while (i < m_text.size()) {
        const unsigned char c = static_cast<unsigned char>(m_text[i]);
        if (c == '"') {
            out = m_text.substr(begin, i - begin);
            m_pos = i + 1;
            return true;
        }
        if (c == '\\' || c < 0x20)
            break;
        ++i;
    }
    if (i >= m_text.size())
        return fail("truncated: line ends inside a string");
    scratch.assign(m_text.data() + begin, i - begin);
    m_pos = i;
    while (m_pos < m_text.size()) {
        const unsigned char c = static_cast<unsigned char>(m_text[m_pos]);
        if (c == '"') {
            ++m_pos;
            out = scratch;
            return true;
        }
        if (c < 0x20)
            return fail("control character in a string at byte " + std::to_string(m_pos));
        if (c != '\\') {
            scratch.push_back(static_cast<char>(c));
            ++m_pos;
            continue;
        }
        if (++m_pos >= m_text.size())
            break;
        const char e = m_text[m_pos++];
        switch (e) {
        case '"': scratch.push_back('"'); break;
        case '\\': scratch.push_back('\\'); break;
        case '/': scratch.push_back('/'); break;
        case 'b': scratch.push_back('\b'); break;
        case 'f': scratch.push_back('\f'); break;
        case 'n': scratch.push_back('\n'); break;
        case 'r': scratch.push_back('\r'); break;
        case 't': scratch.push_back('\t'); break;
        case 'u': {
            uint32_t cp = 0;
            if (!readHex4(cp))
                return false;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                uint32_t low = 0;
                if (m_pos + 1 < m_text.size() && m_text[m_pos] == '\\' && m_text[m_pos + 1] == 'u') {
                    const size_t save = m_pos;
                    m_pos += 2;
                    if (!readHex4(low))
                        return false;
                    if (low >= 0xDC00 && low <= 0xDFFF) {
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                    } else {
                        cp = kReplacement;
                        m_pos = save; // the second escape stands on its own
                    }
                } else {
                    cp = kReplacement;
                }
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                cp = kReplacement;
            }
            appendUtf8(scratch, cp);
            break;
        }
        default:
            return fail("bad escape '\\" + std::string(1, e) + "' at byte " + std::to_string(m_pos - 1));
        }
    }
    return fail("truncated: line ends inside a string");
}

bool JsonReader::readString(std::string& out) {
    std::string_view view;
    if (!readStringView(view, out))
        return false;
    if (view.data() != out.data())
        out.assign(view.data(), view.size());
    return true;
}

bool JsonReader::scanNumber(size_t& end, bool& integral) {
    size_t i = m_pos;
    const size_t n = m_text.size();
    integral = true;
    if (i < n && m_text[i] == '-')
        ++i;
    if (i >= n)
        return fail("truncated: line ends inside a number");
    if (m_text[i] == '0') {
        ++i;
    } else if (isDigit(m_text[i])) {
        while (i < n && isDigit(m_text[i]))
            ++i;
    } else {
        return fail("bad number at byte " + std::to_string(m_pos));
    }
    if (i < n && m_text[i] == '.') {
        integral = false;
        ++i;
        if (i >= n || !isDigit(m_text[i]))
            return fail("bad number at byte " + std::to_string(m_pos));
        while (i < n && isDigit(m_text[i]))
            ++i;
    }
    if (i < n && (m_text[i] == 'e' || m_text[i] == 'E')) {
        integral = false;
        ++i;
        if (i < n && (m_text[i] == '+' || m_text[i] == '-'))
            ++i;
        if (i >= n || !isDigit(m_text[i]))
            return fail("bad number at byte " + std::to_string(m_pos));
        while (i < n && isDigit(m_text[i]))
            ++i;
    }
    end = i;
    return true;
}

bool JsonReader::readDouble(double& out) {
    const Type type = peek();
    if (type == Type::NonFinite) {
        const std::string_view rest = m_text.substr(m_pos);
        if (rest[0] == 'N') {
            out = std::numeric_limits<double>::quiet_NaN();
            m_pos += 3;
        } else if (rest[0] == 'I') {
            out = std::numeric_limits<double>::infinity();
            m_pos += 8;
        } else {
            out = -std::numeric_limits<double>::infinity();
            m_pos += 9;
        }
        return true;
    }
    if (type != Type::Number)
        return fail("expected a number at byte " + std::to_string(m_pos));
    size_t end = 0;
    bool integral = false;
    if (!scanNumber(end, integral))
        return false;
    const char* first = m_text.data() + m_pos;
    const char* last = m_text.data() + end;
    const auto result = std::from_chars(first, last, out);
    if (result.ec == std::errc::result_out_of_range) {
        // from_chars leaves the value unset; strtod gives +-HUGE_VAL or 0 as JSON readers expect.
        out = std::strtod(std::string(first, last).c_str(), nullptr);
    } else if (result.ec != std::errc() || result.ptr != last) {
        return fail("bad number at byte " + std::to_string(m_pos));
    }
    m_pos = end;
    return true;
}

bool JsonReader::readInt64(int64_t& out) {
    const size_t begin = m_pos;
    const char* problem = nullptr;
    if (readInt64(out, problem))
        return true;
    if (problem)
        return fail(std::string("expected an integer, got ") + problem + " at byte " + std::to_string(begin));
    return false;
}

bool JsonReader::readInt64(int64_t& out, const char*& problem) {
    problem = nullptr;
    if (peek() != Type::Number)
        return fail("expected an integer at byte " + std::to_string(m_pos));
    size_t end = 0;
    bool integral = false;
    if (!scanNumber(end, integral))
        return false;
    const char* first = m_text.data() + m_pos;
    const char* last = m_text.data() + end;
    if (integral) {
        const auto result = std::from_chars(first, last, out);
        if (result.ec != std::errc() || result.ptr != last) {
            problem = "out of range"; // the grammar was checked: only the range can be wrong
            m_pos = end;
            return false;
        }
        m_pos = end;
        return true;
    }
    double value = 0;
    const auto result = std::from_chars(first, last, value);
    m_pos = end;
    if (result.ec == std::errc::result_out_of_range) {
        problem = "out of range";
        return false;
    }
    // 2^63 is exactly representable; anything at or above it does not fit.
    if (result.ec != std::errc() || !(value >= -9223372036854775808.0 && value < 9223372036854775808.0)) {
        problem = "out of range";
        return false;
    }
    if (std::floor(value) != value) {
        problem = "a fraction";
        return false;
    }
    out = static_cast<int64_t>(value);
    return true;
}

bool JsonReader::skipValue() { return skipValue(0); }

bool JsonReader::skipValue(int depth) {
    if (depth > kMaxDepth)
        return fail("nested deeper than " + std::to_string(kMaxDepth) + " levels");
    switch (peek()) {
    case Type::Object: {
        ++m_pos;
        if (accept('}'))
            return true;
        std::string scratch;
        for (;;) {
            std::string_view key;
            if (!readStringView(key, scratch) || !expect(':') || !skipValue(depth + 1))
                return false;
            if (accept(','))
                continue;
            return expect('}');
        }
    }
    case Type::Array: {
        ++m_pos;
        if (accept(']'))
            return true;
        for (;;) {
            if (!skipValue(depth + 1))
                return false;
            if (accept(','))
                continue;
            return expect(']');
        }
    }
    case Type::String: {
        std::string scratch;
        std::string_view view;
        return readStringView(view, scratch);
    }
    case Type::Number: {
        size_t end = 0;
        bool integral = false;
        if (!scanNumber(end, integral))
            return false;
        m_pos = end;
        return true;
    }
    case Type::NonFinite: {
        double ignored = 0;
        return readDouble(ignored);
    }
    case Type::True: m_pos += 4; return true;
    case Type::False: m_pos += 5; return true;
    case Type::Null: m_pos += 4; return true;
    case Type::End: return fail("truncated: line ends where a value was expected");
    case Type::Invalid: break;
    }
    return fail("unexpected character at byte " + std::to_string(m_pos));
}

} // namespace parallax

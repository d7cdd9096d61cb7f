#include "core/spec/TomlLimits.h"

#include "core/spec/SpecIO.h"

#include <vector>

namespace parallax {

namespace {

// One pass over the text that follows TOML's structure only as far as depth needs: which characters
// are in strings or comments, where a key's parts are counted (a line's start, a header, after '{'
// or ',' in an inline table) and where a value's brackets open and close. Each value's depth is that
// of its table plus its key's parts; an array's elements are one deeper than the array. Text the
// TOML library refuses may be scanned loosely: the library stops at its first error.
class DepthScanner {
public:
    DepthScanner(std::string_view text, const std::string& source) : m_text(text), m_source(source) {}

    void scan() {
        while (m_at < m_text.size()) {
            const char c = m_text[m_at];
            if (c == '\n') {
                newLine();
            } else if (c == '#') {
                while (m_at < m_text.size() && m_text[m_at] != '\n') ++m_at;
            } else if (c == '"' || c == '\'') {
                m_lineStart = false;
                skipString();
            } else if (c == ' ' || c == '\t' || c == '\r') {
                ++m_at;
            } else if (c == '[' && m_frames.empty() && m_lineStart) {
                readHeader();
            } else {
                m_lineStart = false;
                structural(c);
                ++m_at;
            }
        }
    }

private:
    struct Frame {
        char open; // '[' (array) or '{' (inline table)
        int depth; // of the array or table itself
    };

    std::string_view m_text;
    const std::string& m_source;
    size_t m_at = 0;
    size_t m_line = 1;
    int m_header = 0;          // depth of the table the last [header] opened (0: the root)
    std::vector<Frame> m_frames; // open brackets of the value being read
    bool m_key = true;         // reading a key, whose parts count
    int m_parts = 1;           // parts of that key so far
    bool m_lineStart = true;   // only blanks so far on a line outside any bracket

    int tableDepth() const { return m_frames.empty() ? m_header : m_frames.back().depth; }

    void check(int depth) const {
        if (depth <= kMaxTomlDepth) return;
        throw SpecError(m_source + ":" + std::to_string(m_line) + ": the TOML nests deeper than " +
                        std::to_string(kMaxTomlDepth) +
                        " levels here (the parts of a table header or key, inline tables and arrays within each "
                        "other), the most Parallax reads; a spec or cluster profile nests 3 levels at most "
                        "([launch.env] NAME = \"value\"), so this is not one or it is damaged");
    }

    void newLine() {
        ++m_line;
        ++m_at;
        if (!m_frames.empty()) return; // an array may span lines
        m_key = true;
        m_parts = 1;
        m_lineStart = true;
    }

    void structural(char c) {
        if (c == '.' && m_key) {
            check(tableDepth() + ++m_parts);
        } else if (c == '=' && m_key) {
            check(tableDepth() + m_parts);
            m_key = false;
        } else if ((c == '[' || c == '{') && !m_key) {
            const bool inArray = !m_frames.empty() && m_frames.back().open == '[';
            const int depth = tableDepth() + (inArray ? 1 : m_parts);
            check(depth);
            m_frames.push_back({c, depth});
            m_key = c == '{';
            m_parts = 1;
        } else if ((c == ']' || c == '}') && !m_frames.empty()) {
            m_frames.pop_back();
            m_key = false;
        } else if (c == ',' && !m_frames.empty() && m_frames.back().open == '{') {
            m_key = true;
            m_parts = 1;
        }
    }

    // [a.b."c.d"] or [[a.b]]: the table's depth is its parts (an array of tables one more).
    void readHeader() {
        ++m_at;
        int extra = 0;
        if (m_at < m_text.size() && m_text[m_at] == '[') {
            extra = 1;
            ++m_at;
        }
        int parts = 1;
        while (m_at < m_text.size() && m_text[m_at] != ']' && m_text[m_at] != '\n') {
            const char c = m_text[m_at];
            if (c == '"' || c == '\'') {
                skipString();
                continue;
            }
            if (c == '.') check(++parts + extra);
            ++m_at;
        }
        m_header = parts + extra;
        check(m_header);
        m_key = false; // the rest of the line holds no key
        m_lineStart = false;
    }

    // From an opening quote to just past the closing one (a line's end for an unclosed one-line
    // string, left for the caller to count).
    void skipString() {
        const char quote = m_text[m_at];
        const bool basic = quote == '"';
        const bool multiLine = m_text.substr(m_at, 3) == std::string_view(basic ? "\"\"\"" : "'''");
        m_at += multiLine ? 3 : 1;
        while (m_at < m_text.size()) {
            const char c = m_text[m_at];
            if (c == '\n') {
                if (!multiLine) return;
                ++m_line;
                ++m_at;
            } else if (c == '\\' && basic) {
                // An escaped character, or a multi-line string's line-ending backslash.
                if (m_at + 1 < m_text.size() && m_text[m_at + 1] == '\n' && !multiLine) {
                    ++m_at;
                    continue;
                }
                if (m_at + 1 < m_text.size() && m_text[m_at + 1] == '\n') ++m_line;
                m_at += 2;
            } else if (c == quote) {
                size_t run = 0;
                while (m_at < m_text.size() && m_text[m_at] == quote) {
                    ++run;
                    ++m_at;
                }
                // A multi-line string ends at three quotes; up to two more before them are its text.
                if (!multiLine || run >= 3) return;
            } else {
                ++m_at;
            }
        }
    }
};

std::string mib(size_t bytes) {
    return std::to_string(bytes >> 20) + " MiB";
}

} // namespace

void checkTomlLimits(std::string_view text, const std::string& source) {
    if (text.size() > kMaxTomlBytes)
        throw SpecError(source + ": is larger than " + mib(kMaxTomlBytes) +
                        ", the most Parallax reads of a spec or cluster profile (one listing 100,000 hosts takes "
                        "about 2 MiB); this is not one, or hosts this many belong in a Slurm partition "
                        "(launch.target = \"slurm\")");
    DepthScanner(text, source).scan();
}

std::string readTomlText(std::istream& in) {
    std::string text;
    char buffer[65536];
    while (text.size() <= kMaxTomlBytes && in.read(buffer, sizeof buffer).gcount() > 0)
        text.append(buffer, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxTomlBytes + 1) text.resize(kMaxTomlBytes + 1);
    return text;
}

} // namespace parallax

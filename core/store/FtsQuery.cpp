#include "core/store/FtsQuery.h"

#include <cctype>
#include <sstream>

namespace parallax {

namespace {
bool hasWordChar(const std::string& w) {
    for (unsigned char c : w) {
        if (std::isalnum(c) || c >= 0x80) return true;
    }
    return false;
}
} // namespace

bool usesFtsSyntax(const std::string& text) {
    if (text.find_first_of("\"()") != std::string::npos) return true;
    std::istringstream words(text);
    std::string w;
    while (words >> w) {
        if (w == "AND" || w == "OR" || w == "NOT") return true;
    }
    return false;
}

std::string ftsQueryFromUserText(const std::string& text) {
    if (usesFtsSyntax(text)) return text;
    std::istringstream words(text);
    std::string w;
    std::string out;
    while (words >> w) {
        const bool prefix = w.size() > 1 && w.back() == '*';
        if (prefix) w.pop_back();
        if (!hasWordChar(w)) continue;
        if (!out.empty()) out += ' ';
        // No word contains '"' here (that would have been FTS5 syntax), so quoting is enough.
        out += '"';
        out += w;
        out += '"';
        if (prefix) out += '*';
    }
    return out;
}

} // namespace parallax

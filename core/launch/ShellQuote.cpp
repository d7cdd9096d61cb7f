#include "core/launch/ShellQuote.h"

#include <algorithm>

namespace parallax {

namespace {

bool isSafeShellChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.' || c == '/' || c == ':' || c == ',' || c == '=' || c == '+' || c == '@' ||
           c == '%';
}

} // namespace

std::string shellQuote(std::string_view text) {
    if (!text.empty() && std::all_of(text.begin(), text.end(), isSafeShellChar))
        return std::string(text);
    std::string out = "'";
    for (char c : text) {
        if (c == '\'')
            out += "'\\''";
        else
            out.push_back(c);
    }
    out += "'";
    return out;
}

} // namespace parallax

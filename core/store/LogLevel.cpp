#include "core/store/LogLevel.h"

#include <algorithm>
#include <cctype>

namespace parallax::LogLevel {

namespace {
std::string lower(const std::string& s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}
} // namespace

int fromNameStrict(const std::string& level) {
    if (level == "debug") return Debug;
    if (level == "info") return Info;
    if (level == "warn") return Warn;
    if (level == "error") return Error;
    return -1;
}

Value fromName(const std::string& level) {
    const int exact = fromNameStrict(level);
    if (exact >= 0) return static_cast<Value>(exact);
    const std::string l = lower(level);
    if (l == "debug" || l == "trace") return Debug;
    if (l == "warn" || l == "warning") return Warn;
    if (l == "error" || l == "err" || l == "fatal" || l == "critical") return Error;
    return Info;
}

Value fromInt(long long value) {
    return value >= Debug && value <= Error ? static_cast<Value>(value) : Info;
}

const char* name(int value) {
    switch (value) {
    case Debug: return "debug";
    case Warn: return "warn";
    case Error: return "error";
    default: return "info";
    }
}

} // namespace parallax::LogLevel

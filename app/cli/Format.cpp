#include "app/cli/Format.h"

#include "app/cli/CliError.h"
#include "core/spec/Estimates.h"
#include "core/util/ScaledNumber.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>

namespace parallax {

std::string formatDateTime(double epoch) {
    if (!(epoch > 0))
        return "-";
    const std::time_t t = static_cast<std::time_t>(epoch);
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &tm);
    return buf;
}

std::string formatClock(double epoch) {
    if (!(epoch > 0))
        return "-";
    const std::time_t t = static_cast<std::time_t>(epoch);
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%H:%M:%S", &tm);
    const int ms = static_cast<int>((epoch - std::floor(epoch)) * 1000.0);
    char out[40];
    std::snprintf(out, sizeof out, "%s.%03d", buf, ms);
    return out;
}

std::string formatLoss(double loss) {
    if (std::isnan(loss))
        return "nan";
    char buf[32];
    std::snprintf(buf, sizeof buf, std::fabs(loss) < 1000 ? "%.4f" : "%.4g", loss);
    return buf;
}

std::string formatRate(double perSecond) {
    if (!std::isfinite(perSecond))
        return "-";
    return formatCount(perSecond);
}

std::string formatPercent(double fraction) {
    if (!std::isfinite(fraction))
        return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f%%", fraction * 100.0);
    return buf;
}

std::string formatExact(double value) {
    if (std::isnan(value))
        return "nan";
    if (std::isinf(value))
        return value > 0 ? "inf" : "-inf";
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, value);
    return std::string(buf, r.ptr);
}

double parseByteSize(const std::string& text, const std::string& option) {
    static const std::vector<std::pair<std::string, double>> units = {
        {"", 1},           {"b", 1},
        {"k", 1024.0},     {"kib", 1024.0},
        {"m", 1048576.0},  {"mib", 1048576.0},
        {"g", 1073741824.0}, {"gib", 1073741824.0},
        {"t", 1099511627776.0}, {"tib", 1099511627776.0}};
    if (const auto bytes = parseScaledNumber(text, units)) return *bytes;
    throw CliError(option + " \"" + text + "\" is not a size; write e.g. 24GiB, 800MiB or a number of bytes",
                   ExitCode::Usage);
}


} // namespace parallax

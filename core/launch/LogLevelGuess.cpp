#include "core/launch/LogLevelGuess.h"

namespace parallax {

namespace {

constexpr std::string_view kErrorWords[] = {"error", "Error", "ERROR", "Traceback", "terminate called",
                                            "Segmentation fault", "Killed"};
constexpr std::string_view kWarnWords[] = {"warn", "Warn", "WARN"};

} // namespace

LogLevel::Value guessLogLevel(std::string_view line) {
    for (std::string_view w : kErrorWords) {
        if (line.find(w) != std::string_view::npos)
            return LogLevel::Error;
    }
    for (std::string_view w : kWarnWords) {
        if (line.find(w) != std::string_view::npos)
            return LogLevel::Warn;
    }
    return LogLevel::Info;
}

} // namespace parallax

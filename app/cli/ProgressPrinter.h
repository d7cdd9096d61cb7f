#pragma once

#include "core/launch/Supervisor.h"

#include <chrono>
#include <string>

namespace parallax {

// The progress of a foreground run: on a terminal one line rewritten in place, otherwise a plain
// line at most every `plainEvery` (logs and CI output stay readable).
class ProgressPrinter {
public:
    ProgressPrinter(bool terminal, std::chrono::seconds plainEvery = std::chrono::seconds(10));

    void update(const SupervisorProgress& p);
    // A message on stderr that must not be overwritten by the progress line.
    void notice(LogLevel::Value level, const std::string& message);
    // Ends the progress line (before the final summary).
    void finish();

    // "step 120/500 (24%)  loss 2.3142  12.3K tok/s  ETA 3m20s"
    static std::string describe(const SupervisorProgress& p);

private:
    void clearLine();
    void draw();

    bool m_terminal;
    std::chrono::seconds m_plainEvery;
    std::chrono::steady_clock::time_point m_lastPlain{};
    bool m_printedPlain = false;
    std::string m_line;
};

} // namespace parallax

#pragma once

#include "core/telemetry/Events.h"

#include <mutex>
#include <string>

namespace parallax {

// Writes telemetry events and log lines of this rank to stdout, one whole line per write(2) so that
// lines from the trainer thread and the device sampler never interleave. The launcher forwards them,
// tagged with the rank, to the supervisor. A failing stdout never ends the rank: a reader gone
// (EPIPE) raises no SIGPIPE and stops further output; a line cut by a write error is ended by a
// newline before the next one, so that every later line arrives whole.
class TelemetryEmitter {
public:
    explicit TelemetryEmitter(int rank, int fd = 1) : m_rank(rank), m_fd(fd) {}

    void emit(const TelemetryEvent& event);
    void log(const std::string& level, const std::string& message);
    void info(const std::string& message) { log("info", message); }
    void warn(const std::string& message) { log("warn", message); }
    void error(const std::string& message) { log("error", message); }
    int rank() const { return m_rank; }

    static double now(); // seconds since the Unix epoch

private:
    void writeLine(const std::string& line);
    int m_rank;
    int m_fd;
    std::mutex m_mutex;
    bool m_cut = false;    // the last line was written in part
    bool m_closed = false; // the reader is gone
};

} // namespace parallax

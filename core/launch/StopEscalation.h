#pragma once

#include "core/launch/LaunchControl.h"
#include "core/launch/NoticeSink.h"
#include "core/launch/StopPhase.h"

#include <chrono>
#include <optional>

namespace parallax {

// Turns stop requests into SIGUSR1 (the ranks checkpoint and stop) -> SIGTERM after `stopGrace`
// -> SIGKILL after `termGrace`; a second request escalates at once. Requests arrive as bytes on a
// pipe (each byte the number of the signal that asked), which a signal handler and any thread may
// write to; the supervising loop polls its read end. Each step is said as a notice.
class StopEscalation {
public:
    using Clock = std::chrono::steady_clock;

    StopEscalation(LaunchControl& launch, NoticeSink& notices, std::chrono::milliseconds stopGrace,
                   std::chrono::milliseconds termGrace);
    ~StopEscalation();
    StopEscalation(const StopEscalation&) = delete;
    StopEscalation& operator=(const StopEscalation&) = delete;

    // The pipe's ends: write a byte to request a stop (async-signal-safe), poll the other.
    int requestFd() const { return m_pipe[1]; }
    int pollFd() const { return m_pipe[0]; }
    // Requests a stop as `signal` would; safe from any thread and from a signal handler.
    void request(int signal) const;

    // Reads the requests that arrived; each one escalates once something was launched. Returns
    // whether there was any.
    bool readRequests(Clock::time_point now);
    // Takes one request without acting on it (the run has ended; a request gives up waiting).
    bool takeRequest();
    // Escalates when the current step's time is up.
    void tick(Clock::time_point now);
    // Starts a stop as a request of `signal` would, unless one has begun or nothing was launched.
    void begin(int signal, Clock::time_point now);
    // Everything of the launch ends now, without a word (the caller has said why).
    void endNow();
    // The ranks are asked to write their flight recorders (SIGUSR2), and everything ends after
    // `dumpTime`.
    void dumpThenEnd(Clock::time_point now, std::chrono::milliseconds dumpTime = std::chrono::seconds(3));

    StopPhase phase() const { return m_phase; }
    bool stopping() const { return m_phase != StopPhase::None; }
    // The signal of the first request (0: none).
    int signal() const { return m_signal; }
    // Until the current step's time is up; std::nullopt when nothing waits for a deadline.
    std::optional<std::chrono::milliseconds> timeLeft(Clock::time_point now) const;

private:
    void advance(bool byDeadline, Clock::time_point now);

    LaunchControl& m_launch;
    NoticeSink& m_notices;
    std::chrono::milliseconds m_stopGrace;
    std::chrono::milliseconds m_termGrace;
    int m_pipe[2] = {-1, -1};
    StopPhase m_phase = StopPhase::None;
    int m_signal = 0;
    Clock::time_point m_deadline;
    std::optional<Clock::time_point> m_killAt; // dumpThenEnd: everything ends then
};

} // namespace parallax

#include "core/launch/StopEscalation.h"

#include "core/launch/SignalNames.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>

namespace parallax {

namespace {

std::string seconds(std::chrono::milliseconds d) {
    std::ostringstream s;
    s << d.count() / 1000.0 << " s";
    return s.str();
}

} // namespace

StopEscalation::StopEscalation(LaunchControl& launch, NoticeSink& notices, std::chrono::milliseconds stopGrace,
                               std::chrono::milliseconds termGrace)
    : m_launch(launch), m_notices(notices), m_stopGrace(stopGrace), m_termGrace(termGrace) {
    if (pipe2(m_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
        throw std::runtime_error(std::string("cannot create the supervisor's signal pipe: ") + std::strerror(errno));
}

StopEscalation::~StopEscalation() {
    ::close(m_pipe[0]);
    ::close(m_pipe[1]);
}

void StopEscalation::request(int signal) const {
    const unsigned char byte = static_cast<unsigned char>(signal);
    [[maybe_unused]] const ssize_t n = ::write(m_pipe[1], &byte, 1);
}

bool StopEscalation::readRequests(Clock::time_point now) {
    unsigned char bytes[16];
    bool any = false;
    for (;;) {
        const ssize_t n = ::read(m_pipe[0], bytes, sizeof bytes);
        if (n <= 0)
            break;
        for (ssize_t i = 0; i < n; ++i) {
            if (m_signal == 0)
                m_signal = bytes[i];
            any = true;
            if (m_launch.launched())
                advance(false, now);
        }
    }
    return any;
}

bool StopEscalation::takeRequest() {
    unsigned char byte = 0;
    return ::read(m_pipe[0], &byte, 1) == 1;
}

void StopEscalation::tick(Clock::time_point now) {
    if (m_killAt && now >= *m_killAt) {
        m_killAt.reset();
        m_phase = StopPhase::Kill;
        m_launch.killAll();
    }
    if ((m_phase == StopPhase::Graceful || m_phase == StopPhase::Terminate) && now >= m_deadline)
        advance(true, now);
}

void StopEscalation::begin(int signal, Clock::time_point now) {
    if (m_phase != StopPhase::None || !m_launch.launched())
        return;
    m_signal = signal;
    advance(false, now);
}

void StopEscalation::endNow() {
    m_phase = StopPhase::Kill;
    m_launch.killAll();
}

void StopEscalation::dumpThenEnd(Clock::time_point now, std::chrono::milliseconds dumpTime) {
    // mpirun passes SIGUSR2 on to the ranks, which write their rings.
    m_launch.signalRanks(SIGUSR2);
    m_killAt = now + dumpTime;
    m_phase = StopPhase::Terminate;
    m_deadline = now + std::chrono::seconds(5);
}

std::optional<std::chrono::milliseconds> StopEscalation::timeLeft(Clock::time_point now) const {
    if (m_phase != StopPhase::Graceful && m_phase != StopPhase::Terminate)
        return std::nullopt;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(m_deadline - now);
    return std::max(left, std::chrono::milliseconds(0));
}

void StopEscalation::advance(bool byDeadline, Clock::time_point now) {
    const std::string name = m_launch.name();
    switch (m_phase) {
    case StopPhase::None:
        m_phase = StopPhase::Graceful;
        m_deadline = now + m_stopGrace;
        if (m_launch.queued()) {
            // Nothing runs yet, so nothing to checkpoint: the job leaves the queue.
            m_phase = StopPhase::Kill;
            m_notices.notice(LogLevel::Warn, "stop requested (" + signalName(m_signal) + ") while " + name +
                                         " waits in the queue: it is cancelled");
            m_launch.killAll();
            break;
        }
        m_launch.signalRanks(SIGUSR1);
        m_notices.notice(LogLevel::Warn, "stop requested (" + signalName(m_signal) + "): SIGUSR1 to " + name +
                                     " asks the ranks to checkpoint and stop; SIGTERM in " + seconds(m_stopGrace));
        break;
    case StopPhase::Graceful:
        m_phase = StopPhase::Terminate;
        m_deadline = now + m_termGrace;
        m_launch.terminate();
        m_notices.notice(LogLevel::Warn, std::string(byDeadline ? "the ranks did not stop within " + seconds(m_stopGrace)
                                                        : std::string("stop requested again")) +
                                     ": SIGTERM to " + name + "; SIGKILL in " + seconds(m_termGrace));
        break;
    case StopPhase::Terminate:
        m_phase = StopPhase::Kill;
        m_notices.notice(LogLevel::Warn, std::string(byDeadline ? name + " did not exit within " + seconds(m_termGrace)
                                                        : std::string("stop requested again")) +
                                     ": SIGKILL to every process of the launch");
        m_launch.killRanks();
        break;
    case StopPhase::Kill:
        break;
    }
}

} // namespace parallax

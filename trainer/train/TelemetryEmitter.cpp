#include "trainer/train/TelemetryEmitter.h"

#include "core/telemetry/TelemetryCodec.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

namespace parallax {

double TelemetryEmitter::now() {
    using namespace std::chrono;
    return duration<double>(system_clock::now().time_since_epoch()).count();
}

void TelemetryEmitter::emit(const TelemetryEvent& event) {
    writeLine(encodeEvent(event));
}

void TelemetryEmitter::log(const std::string& level, const std::string& message) {
    LogEvent e;
    e.rank = m_rank;
    e.level = level;
    e.message = message;
    e.t = now();
    emit(e);
}

void TelemetryEmitter::writeLine(const std::string& line) {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_closed) return;
    std::string out;
    out.reserve(line.size() + 2);
    // A line cut by an earlier failed write is ended first: the reader takes it for one malformed
    // line (a log line) and this one stays whole.
    if (m_cut) out.push_back('\n');
    out += line;
    out.push_back('\n');

    // A reader that went away must not end the rank by SIGPIPE in the middle of a collective (the
    // other ranks would hang or abort): the signal is blocked on this thread for the write and, if
    // the write raised it, taken back before it is unblocked. Other threads keep their own mask.
    sigset_t pipeSignal, previous;
    sigemptyset(&pipeSignal);
    sigaddset(&pipeSignal, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipeSignal, &previous);
    sigset_t pendingBefore;
    sigpending(&pendingBefore);
    const bool alreadyPending = sigismember(&pendingBefore, SIGPIPE) == 1;

    const char* p = out.data();
    size_t left = out.size();
    bool broken = false;
    while (left > 0) {
        const ssize_t n = ::write(m_fd, p, left);
        if (n > 0) {
            p += n;
            left -= static_cast<size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            // stdout may have been left non-blocking by whoever shares it: wait instead of
            // dropping the rest of the line.
            pollfd fd{m_fd, POLLOUT, 0};
            ::poll(&fd, 1, 1000);
            continue;
        }
        broken = n < 0 && errno == EPIPE;
        break;
    }
    if (left == 0) {
        m_cut = false;
    } else if (broken) {
        m_closed = true; // nobody reads any more; training goes on and its checkpoints keep the state
    } else {
        m_cut = p != out.data() || m_cut; // e.g. a full disk under a redirected stdout: retried per line
    }

    if (broken && !alreadyPending) {
        const timespec now{0, 0};
        sigtimedwait(&pipeSignal, nullptr, &now);
    }
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

} // namespace parallax

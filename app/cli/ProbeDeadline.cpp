#include "app/cli/ProbeDeadline.h"

#include "app/cli/CliError.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <string>

namespace parallax {

ProbeDeadline::ProbeDeadline(int stopFd, double seconds) {
    // An epoll instance is readable while any descriptor in it is: the timer or the stop pipe.
    m_timer = ::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    m_epoll = ::epoll_create1(EPOLL_CLOEXEC);
    if (m_timer < 0 || m_epoll < 0) {
        const std::string reason = std::strerror(errno);
        release();
        throw CliError("cannot set a probe's time limit: " + reason);
    }
    itimerspec at{};
    at.it_value.tv_sec = static_cast<time_t>(std::floor(seconds));
    at.it_value.tv_nsec = static_cast<long>((seconds - std::floor(seconds)) * 1e9);
    if (at.it_value.tv_sec == 0 && at.it_value.tv_nsec == 0) at.it_value.tv_nsec = 1; // 0 would disarm it
    epoll_event timer{};
    timer.events = EPOLLIN;
    timer.data.fd = m_timer;
    epoll_event stop{};
    stop.events = EPOLLIN;
    stop.data.fd = stopFd;
    if (::timerfd_settime(m_timer, 0, &at, nullptr) != 0 || ::epoll_ctl(m_epoll, EPOLL_CTL_ADD, m_timer, &timer) != 0 ||
        (stopFd >= 0 && ::epoll_ctl(m_epoll, EPOLL_CTL_ADD, stopFd, &stop) != 0)) {
        const std::string reason = std::strerror(errno);
        release();
        throw CliError("cannot set a probe's time limit: " + reason);
    }
}

ProbeDeadline::~ProbeDeadline() {
    release();
}

void ProbeDeadline::release() {
    if (m_epoll >= 0) ::close(m_epoll);
    if (m_timer >= 0) ::close(m_timer);
    m_epoll = m_timer = -1;
}

bool ProbeDeadline::expired() const {
    pollfd p{m_timer, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

} // namespace parallax

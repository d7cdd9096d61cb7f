#pragma once

namespace parallax {

// A probe's time limit as a stop request. fd() becomes readable when `seconds` have passed or when
// `stopFd` (the stop requests' pipe) does, and is given to runCommands as its stop descriptor:
// at the limit the probe's supervisor gets SIGTERM and stops its run, launcher and ranks included,
// as a person's stop does. (Killed instead, it would leave its launcher and ranks, which run in
// sessions of their own, running until they notice it is gone.)
class ProbeDeadline {
public:
    ProbeDeadline(int stopFd, double seconds);
    ~ProbeDeadline();
    ProbeDeadline(const ProbeDeadline&) = delete;
    ProbeDeadline& operator=(const ProbeDeadline&) = delete;

    int fd() const { return m_epoll; }
    bool expired() const; // the time has passed

private:
    void release();

    int m_timer = -1;
    int m_epoll = -1;
};

} // namespace parallax

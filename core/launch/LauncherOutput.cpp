#include "core/launch/LauncherOutput.h"

#include <unistd.h>

#include <cerrno>

namespace parallax {

namespace {

double wallNow() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

} // namespace

void LauncherOutput::addTo(std::vector<pollfd>& fds) const {
    if (m_launcher.stdoutFd() >= 0)
        fds.push_back({m_launcher.stdoutFd(), POLLIN, 0});
    if (m_launcher.stderrFd() >= 0)
        fds.push_back({m_launcher.stderrFd(), POLLIN, 0});
}

void LauncherOutput::read(const std::vector<pollfd>& fds) {
    for (const pollfd& p : fds) {
        if (!p.revents)
            continue;
        if (p.fd == m_launcher.stdoutFd() && !readPipe(p.fd, OutputStream::Stdout))
            m_launcher.closeStdout();
        else if (p.fd == m_launcher.stderrFd() && !readPipe(p.fd, OutputStream::Stderr))
            m_launcher.closeStderr();
    }
}

void LauncherOutput::drain(std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while ((m_launcher.stdoutFd() >= 0 || m_launcher.stderrFd() >= 0) && std::chrono::steady_clock::now() < end) {
        std::vector<pollfd> fds;
        addTo(fds);
        if (::poll(fds.data(), fds.size(), 100) > 0)
            read(fds);
    }
}

bool LauncherOutput::readPipe(int fd, OutputStream pipe) {
    static thread_local std::vector<char> buffer(1 << 16);
    for (int i = 0; i < 64; ++i) {
        const ssize_t n = ::read(fd, buffer.data(), buffer.size());
        if (n > 0) {
            m_router.append(pipe, buffer.data(), static_cast<size_t>(n), wallNow());
            if (static_cast<size_t>(n) < buffer.size())
                return true;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return true;
        m_router.finishPipe(pipe, wallNow()); // end of file, or an error that ends the pipe all the same
        return false;
    }
    return true;
}

} // namespace parallax

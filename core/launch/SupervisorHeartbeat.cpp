#include "core/launch/SupervisorHeartbeat.h"

#include "core/launch/SupervisorAliveFile.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>

namespace parallax {

SupervisorHeartbeat::SupervisorHeartbeat(const std::string& runDir, std::chrono::milliseconds every)
    : m_path(supervisorAliveFile(runDir)), m_every(every) {
    if (!write())
        throw std::runtime_error("cannot write " + m_path + ": " + m_failure);
}

SupervisorHeartbeat::~SupervisorHeartbeat() { finish(); }

void SupervisorHeartbeat::beat() {
    if (m_finished || std::chrono::steady_clock::now() - m_last < m_every)
        return;
    write();
}

void SupervisorHeartbeat::finish() {
    if (m_finished)
        return;
    m_finished = true;
    ::unlink(m_path.c_str());
}

bool SupervisorHeartbeat::write() {
    m_last = std::chrono::steady_clock::now();
    ++m_beats;
    // What changes is what the ranks look at; pid and time are for a person reading the file.
    const std::string text = "parallax supervisor pid " + std::to_string(getpid()) + " beat " +
                             std::to_string(m_beats) + " at " + std::to_string(std::time(nullptr)) + "\n";
    const int fd = ::open(m_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        m_failure = std::strerror(errno);
        return false;
    }
    size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            m_failure = n < 0 ? std::strerror(errno) : "nothing written";
            ::close(fd);
            return false;
        }
        done += static_cast<size_t>(n);
    }
    // close() is where NFS writes the data back and reports what failed doing so.
    if (::close(fd) != 0) {
        m_failure = std::strerror(errno);
        return false;
    }
    m_failure.clear();
    return true;
}

} // namespace parallax

#include "trainer/train/SupervisorWatch.h"

#include "core/launch/SupervisorAliveFile.h"
#include "core/util/HostName.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>

namespace parallax {

namespace {

constexpr std::chrono::milliseconds kDefaultTimeout(30000);

// What the file is now: its contents, inode, size and mtime, read through open() so that NFS
// revalidates them. nullopt with `missing` set when it does not exist; nullopt alone when it could not
// be read for another reason (counted as no change).
std::optional<std::string> observe(const std::string& path, bool& missing) {
    missing = false;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        missing = errno == ENOENT;
        return std::nullopt;
    }
    std::string seen;
    struct stat st {};
    if (fstat(fd, &st) == 0) {
        seen = std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) +
               "." + std::to_string(st.st_mtim.tv_nsec) + ":";
    }
    char buffer[512];
    for (;;) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        seen.append(buffer, static_cast<size_t>(n));
        if (seen.size() > 4096)
            break;
    }
    ::close(fd);
    return seen;
}

std::string seconds(std::chrono::milliseconds d) {
    std::ostringstream out;
    out << static_cast<double>(d.count()) / 1000.0;
    return out.str();
}

} // namespace

SupervisorWatch::SupervisorWatch(const std::string& runDir, int rank, std::chrono::milliseconds timeout,
                                 LostHandler onLost, std::chrono::milliseconds pollEvery)
    : m_path(supervisorAliveFile(runDir)),
      m_who("parallax-worker rank " + std::to_string(rank) + " on " + hostName()),
      m_timeout(timeout),
      m_pollEvery(pollEvery.count() > 0
                      ? pollEvery
                      : std::clamp(timeout / 4, std::chrono::milliseconds(20), std::chrono::milliseconds(1000))),
      m_onLost(std::move(onLost)) {
    m_thread = std::thread([this] { run(); });
}

SupervisorWatch::~SupervisorWatch() {
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_stop = true;
    }
    m_wake.notify_all();
    m_thread.join();
}

std::chrono::milliseconds SupervisorWatch::timeoutFromEnvironment() {
    const char* text = std::getenv("PARALLAX_SUPERVISOR_TIMEOUT_S");
    if (!text || !*text)
        return kDefaultTimeout;
    char* end = nullptr;
    const double s = std::strtod(text, &end);
    if (end == text || *end != '\0' || !(s > 0) || s > 1e6) {
        std::cerr << "parallax-worker: PARALLAX_SUPERVISOR_TIMEOUT_S=" << text
                  << " is not a positive number of seconds; using " << seconds(kDefaultTimeout) << " s\n";
        return kDefaultTimeout;
    }
    return std::chrono::milliseconds(std::max<long long>(1, static_cast<long long>(s * 1000.0)));
}

void SupervisorWatch::run() {
    using Clock = std::chrono::steady_clock;
    std::optional<std::string> last;
    Clock::time_point lastChange;
    int missingInARow = 0;
    std::string reason;
    std::unique_lock<std::mutex> lock(m_mutex);
    while (!m_stop) {
        lock.unlock();
        bool missing = false;
        const std::optional<std::string> now = observe(m_path, missing);
        const Clock::time_point t = Clock::now();
        if (now && (!last || *now != *last)) {
            last = now;
            lastChange = t;
            missingInARow = 0;
        } else if (last) {
            // Unchanged, unreadable for a moment or missing once all count as no sign of life; a
            // file missing twice in a row was removed (one failed lookup on a network file system
            // is no reason to end a run).
            missingInARow = missing ? missingInARow + 1 : 0;
            if (missingInARow >= 2)
                reason = m_path + " was removed";
            else if (t - lastChange >= m_timeout)
                reason = m_path + " unchanged for " + seconds(m_timeout) + " s";
        }
        lock.lock();
        if (!reason.empty() || m_stop)
            break;
        m_wake.wait_for(lock, m_pollEvery, [this] { return m_stop; });
    }
    if (reason.empty() || m_stop)
        return;
    lock.unlock();
    const std::string message = m_who + ": the supervisor of this run stopped answering (" + reason + "); exiting";
    if (m_onLost) {
        m_onLost(message);
        return;
    }
    const std::string line = message + "\n";
    [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
    _exit(kExitCode);
}

} // namespace parallax

#include "core/launch/CommandRun.h"

#include "core/launch/LauncherProcess.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <memory>

namespace parallax {

namespace {

using Clock = std::chrono::steady_clock;

// Reads what a pipe has; false at its end.
bool drain(int fd, std::string& into) {
    char buf[4096];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n > 0) {
            into.append(buf, static_cast<size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
}

// A stop request on `stopFd`: SIGTERM to every command still running. Returns whether one came.
bool forwardStop(int stopFd, std::vector<std::unique_ptr<LauncherProcess>>& running,
                 std::vector<CommandResult>& results) {
    pollfd stop{stopFd, POLLIN, 0};
    if (::poll(&stop, 1, 0) <= 0 || !(stop.revents & (POLLIN | POLLHUP)))
        return false;
    for (size_t i = 0; i < running.size(); ++i) {
        if (!running[i] || running[i]->tryWait()) continue;
        running[i]->signal(SIGTERM);
        results[i].stopped = true;
    }
    return true;
}

} // namespace

std::vector<CommandResult> runCommands(const std::vector<std::vector<std::string>>& commands,
                                       std::chrono::milliseconds timeout,
                                       const std::map<std::string, std::string>& env, int stopFd) {
    std::vector<CommandResult> results(commands.size());
    std::vector<std::unique_ptr<LauncherProcess>> running(commands.size());
    const Clock::time_point start = Clock::now();
    const Clock::time_point deadline = start + timeout;
    for (size_t i = 0; i < commands.size(); ++i) {
        running[i] = std::make_unique<LauncherProcess>();
        const int rc = running[i]->start(commands[i], env);
        if (rc != 0) {
            results[i].start_error = (commands[i].empty() ? std::string("(empty)") : commands[i][0]) + ": " +
                                     std::strerror(rc);
            running[i].reset();
        }
    }
    bool stopSent = false;
    for (;;) {
        std::vector<pollfd> fds;
        std::vector<std::pair<size_t, bool>> owners; // command, stdout
        bool anyRunning = false;
        if (stopFd >= 0 && !stopSent)
            stopSent = forwardStop(stopFd, running, results);
        for (size_t i = 0; i < running.size(); ++i) {
            LauncherProcess* p = running[i].get();
            if (!p) continue;
            if (p->stdoutFd() >= 0) {
                fds.push_back({p->stdoutFd(), POLLIN, 0});
                owners.emplace_back(i, true);
            }
            if (p->stderrFd() >= 0) {
                fds.push_back({p->stderrFd(), POLLIN, 0});
                owners.emplace_back(i, false);
            }
            if (p->stdoutFd() >= 0 || p->stderrFd() >= 0 || !p->tryWait()) anyRunning = true;
        }
        if (!anyRunning) break;
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) break;
        if (fds.empty()) {
            ::usleep(10 * 1000);
        } else if (::poll(fds.data(), fds.size(), static_cast<int>(std::min<int64_t>(left.count(), 50))) > 0) {
            for (size_t k = 0; k < fds.size(); ++k) {
                if (!fds[k].revents) continue;
                const auto [i, isOut] = owners[k];
                LauncherProcess& p = *running[i];
                if (!drain(fds[k].fd, isOut ? results[i].out : results[i].err)) {
                    if (isOut) p.closeStdout();
                    else p.closeStderr();
                }
            }
        }
        for (size_t i = 0; i < running.size(); ++i) {
            LauncherProcess* p = running[i].get();
            if (p && p->stdoutFd() < 0 && p->stderrFd() < 0 && p->tryWait() && results[i].seconds == 0)
                results[i].seconds = std::chrono::duration<double>(Clock::now() - start).count();
        }
    }
    for (size_t i = 0; i < running.size(); ++i) {
        LauncherProcess* p = running[i].get();
        if (!p) continue;
        if (!p->tryWait() || p->stdoutFd() >= 0 || p->stderrFd() >= 0) {
            p->killAll(); // past the timeout
            results[i].timed_out = true;
            results[i].seconds = std::chrono::duration<double>(Clock::now() - start).count();
            continue;
        }
        const int status = *p->status();
        results[i].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    return results;
}

} // namespace parallax

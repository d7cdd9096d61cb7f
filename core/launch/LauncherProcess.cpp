#include "core/launch/LauncherProcess.h"

#include "core/launch/ProcessTable.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <thread>

extern char** environ;

namespace parallax {

namespace {

struct SpawnAttributes {
    posix_spawnattr_t attr;
    posix_spawn_file_actions_t actions;
    SpawnAttributes() {
        posix_spawnattr_init(&attr);
        posix_spawn_file_actions_init(&actions);
    }
    ~SpawnAttributes() {
        posix_spawn_file_actions_destroy(&actions);
        posix_spawnattr_destroy(&attr);
    }
};

void closeFd(int& fd) {
    if (fd >= 0)
        ::close(fd);
    fd = -1;
}

} // namespace

LauncherProcess::~LauncherProcess() {
    if (m_pid > 0 && !m_status) {
        killAll();
        int status = 0;
        while (waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    closeFd(m_out);
    closeFd(m_err);
}

int LauncherProcess::start(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
    if (argv.empty())
        return EINVAL;
    int outPipe[2];
    int errPipe[2];
    if (pipe2(outPipe, O_CLOEXEC) != 0)
        return errno;
    if (pipe2(errPipe, O_CLOEXEC) != 0) {
        const int e = errno;
        ::close(outPipe[0]);
        ::close(outPipe[1]);
        return e;
    }

    // Ranks orphaned by a launcher that dies come here to be reaped (see the class comment).
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);

    SpawnAttributes sa;
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
#ifdef POSIX_SPAWN_SETSID
    flags |= POSIX_SPAWN_SETSID;
#else
    flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(&sa.attr, 0);
#endif
    posix_spawnattr_setflags(&sa.attr, flags);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&sa.attr, &none);
    sigset_t defaults;
    sigemptyset(&defaults);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGPIPE, SIGCHLD, SIGQUIT})
        sigaddset(&defaults, s);
    posix_spawnattr_setsigdefault(&sa.attr, &defaults);
    posix_spawn_file_actions_addopen(&sa.actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&sa.actions, outPipe[1], 1);
    posix_spawn_file_actions_adddup2(&sa.actions, errPipe[1], 2);

    std::vector<char*> args;
    for (const std::string& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);

    std::vector<std::string> envStrings;
    for (char** e = environ; e && *e; ++e) {
        const char* eq = std::strchr(*e, '=');
        const std::string name = eq ? std::string(*e, static_cast<size_t>(eq - *e)) : std::string(*e);
        if (!env.count(name))
            envStrings.emplace_back(*e);
    }
    for (const auto& [name, value] : env)
        envStrings.push_back(name + "=" + value);
    std::vector<char*> envp;
    for (std::string& s : envStrings)
        envp.push_back(s.data());
    envp.push_back(nullptr);

    pid_t pid = -1;
    const int rc = posix_spawnp(&pid, args[0], &sa.actions, &sa.attr, args.data(), envp.data());
    ::close(outPipe[1]);
    ::close(errPipe[1]);
    if (rc != 0) {
        ::close(outPipe[0]);
        ::close(errPipe[0]);
        return rc;
    }
    m_pid = pid;
    m_out = outPipe[0];
    m_err = errPipe[0];
    fcntl(m_out, F_SETFL, fcntl(m_out, F_GETFL) | O_NONBLOCK);
    fcntl(m_err, F_SETFL, fcntl(m_err, F_GETFL) | O_NONBLOCK);
    return 0;
}

void LauncherProcess::closeStdout() { closeFd(m_out); }
void LauncherProcess::closeStderr() { closeFd(m_err); }

bool LauncherProcess::signal(int sig) {
    if (m_pid <= 0 || m_status)
        return false;
    return ::kill(m_pid, sig) == 0;
}

std::optional<int> LauncherProcess::tryWait() {
    if (m_status || m_pid <= 0)
        return m_status;
    int status = 0;
    pid_t r;
    do {
        r = waitpid(m_pid, &status, WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r == m_pid)
        m_status = status;
    return m_status;
}

int LauncherProcess::killAll() {
    if (m_pid <= 0)
        return 0;
    // The session id is the launcher's pid (setsid); the process group too.
    const pid_t sid = m_pid;
    int signalled = 0;
    for (int round = 0; round < 50; ++round) {
        if (!m_status)
            ::kill(m_pid, SIGKILL);
        ::kill(-sid, SIGKILL);
        bool running = false;
        for (pid_t p : processesInSession(sid)) {
            if (p == getpid())
                continue;
            if (processIsRunning(p)) {
                running = true;
                if (::kill(p, SIGKILL) == 0)
                    ++signalled;
            }
            if (p != m_pid) {
                int status = 0;
                waitpid(p, &status, WNOHANG); // an orphaned rank reparented here
            }
        }
        if (!m_status) {
            int status = 0;
            if (waitpid(m_pid, &status, WNOHANG) == m_pid)
                m_status = status;
        }
        if (!running && m_status)
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(round < 10 ? 5 : 20));
    }
    return signalled;
}

} // namespace parallax

#include "core/launch/LauncherProcess.h"

#include "core/launch/ProcessTable.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

extern char** environ;

namespace parallax {

namespace {

void closeFd(int& fd) {
    if (fd >= 0)
        ::close(fd);
    fd = -1;
}

// The files argv[0] may be, in the order posix_spawnp and execvp try them: the name itself when it
// has a slash, else the name in each PATH entry (an empty entry is the current folder; without PATH,
// the system's default path).
std::vector<std::string> executableCandidates(const std::string& name) {
    if (name.find('/') != std::string::npos)
        return {name};
    std::string path;
    if (const char* env = std::getenv("PATH")) {
        path = env;
    } else {
        const size_t n = confstr(_CS_PATH, nullptr, 0);
        path.resize(n > 0 ? n - 1 : 0);
        if (n > 0)
            confstr(_CS_PATH, path.data(), n);
    }
    std::vector<std::string> out;
    size_t begin = 0;
    for (;;) {
        const size_t colon = path.find(':', begin);
        const std::string dir = path.substr(begin, colon == std::string::npos ? std::string::npos : colon - begin);
        out.push_back((dir.empty() ? std::string(".") : dir) + "/" + name);
        if (colon == std::string::npos)
            break;
        begin = colon + 1;
    }
    return out;
}

// Everything the child needs, built before it starts: until it execs, the child calls only
// async-signal-safe functions (another thread may hold malloc's lock, and the child shares this
// process's memory).
struct ExecRequest {
    std::vector<std::string> candidates;
    std::vector<char*> paths;
    std::vector<char*> args;
    std::vector<std::string> envStrings;
    std::vector<char*> envp;
    pid_t parent = 0;
    int out = -1;    // write end of the stdout pipe
    int err = -1;    // write end of the stderr pipe
    int status = -1; // write end of the pipe that carries exec's errno (close-on-exec)
};

// Signals whose disposition the launcher starts with at the default, as posix_spawn's
// POSIX_SPAWN_SETSIGDEF did (an ignored SIGPIPE or SIGCHLD would survive exec otherwise).
constexpr int kDefaultSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGPIPE, SIGCHLD, SIGQUIT};

[[noreturn]] void failChild(int statusFd, int error) {
    ssize_t written;
    do {
        written = ::write(statusFd, &error, sizeof error);
    } while (written < 0 && errno == EINTR);
    _exit(127);
}

// A descriptor of at least 3 (close-on-exec), so that moving the pipes onto 0, 1 and 2 cannot
// overwrite one another when this process started with some of those closed.
int aboveStandard(int fd) {
    return fd > 2 ? fd : fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

bool moveTo(int fd, int target) {
    if (fd == target)
        return fcntl(fd, F_SETFD, 0) == 0; // keep it across exec
    return dup2(fd, target) == target;
}

[[noreturn]] void execChild(const ExecRequest& r) {
    int status = r.status;
    // The parent blocked every signal around the clone; handlers of the parent must not run here.
    for (int s = 1; s < NSIG; ++s) {
        if (s == SIGKILL || s == SIGSTOP)
            continue;
        struct sigaction old {};
        if (sigaction(s, nullptr, &old) != 0)
            continue;
        const bool handled =
            (old.sa_flags & SA_SIGINFO) != 0 || (old.sa_handler != SIG_IGN && old.sa_handler != SIG_DFL);
        bool listed = false;
        for (int d : kDefaultSignals)
            listed = listed || d == s;
        if (handled || listed) {
            struct sigaction dfl {};
            dfl.sa_handler = SIG_DFL;
            sigemptyset(&dfl.sa_mask);
            sigaction(s, &dfl, nullptr);
        }
    }
    // SIGTERM when the supervising thread ends. If the parent ended before this call, no signal
    // will come: this process has been reparented already, and ends here.
    if (prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) != 0)
        failChild(status, errno);
    if (getppid() != r.parent)
        _exit(128 + SIGTERM);
    if (setsid() < 0)
        failChild(status, errno);

    status = aboveStandard(status);
    const int out = aboveStandard(r.out);
    const int err = aboveStandard(r.err);
    if (status < 0 || out < 0 || err < 0)
        failChild(status < 0 ? r.status : status, errno);
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0 || !moveTo(null, 0) || !moveTo(out, 1) || !moveTo(err, 2))
        failChild(status, errno);

    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);

    // On these errors execvp and posix_spawnp go on to the next PATH entry; having tried them all,
    // they report EACCES if any entry gave it. Any other error ends the search.
    bool sawAccess = false;
    int error = ENOENT;
    for (char* path : r.paths) {
        if (!path)
            break;
        execve(path, r.args.data(), r.envp.data());
        error = errno;
        if (error == EACCES) {
            sawAccess = true;
            continue;
        }
        if (error != ENOENT && error != ENOTDIR && error != ESTALE && error != ENODEV && error != ETIMEDOUT)
            failChild(status, error);
    }
    failChild(status, sawAccess ? EACCES : error);
}

// The child's stack: what execChild and exec's argument copying need, with room to spare.
constexpr size_t kChildStackBytes = 256 * 1024;

int childMain(void* request) {
    execChild(*static_cast<const ExecRequest*>(request));
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

namespace {

// The program's candidate paths, its arguments and its environment (this process's, `env` on top)
// as exec takes them, made before the child starts: the child only calls exec.
void fillExecRequest(ExecRequest& r, const std::vector<std::string>& argv,
                     const std::map<std::string, std::string>& env) {
    r.candidates = executableCandidates(argv.front());
    for (std::string& c : r.candidates)
        r.paths.push_back(c.data());
    r.paths.push_back(nullptr);
    for (const std::string& a : argv)
        r.args.push_back(const_cast<char*>(a.c_str()));
    r.args.push_back(nullptr);
    for (char** e = environ; e && *e; ++e) {
        const char* eq = std::strchr(*e, '=');
        const std::string name = eq ? std::string(*e, static_cast<size_t>(eq - *e)) : std::string(*e);
        if (!env.count(name))
            r.envStrings.emplace_back(*e);
    }
    for (const auto& [name, value] : env)
        r.envStrings.push_back(name + "=" + value);
    for (std::string& s : r.envStrings)
        r.envp.push_back(s.data());
    r.envp.push_back(nullptr);
}

// 0 once the child `pid` has exec'd (exec closes the status pipe: end of file), else the errno it
// wrote before it could, with the child reaped.
int execResult(int statusFd, pid_t pid) {
    int childError = 0;
    ssize_t n;
    do {
        n = ::read(statusFd, &childError, sizeof childError);
    } while (n < 0 && errno == EINTR);
    if (n != static_cast<ssize_t>(sizeof childError))
        return 0;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return childError;
}

} // namespace

int LauncherProcess::start(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
    if (argv.empty())
        return EINVAL;
    int outPipe[2];
    int errPipe[2];
    int statusPipe[2];
    if (pipe2(outPipe, O_CLOEXEC) != 0)
        return errno;
    if (pipe2(errPipe, O_CLOEXEC) != 0) {
        const int e = errno;
        ::close(outPipe[0]);
        ::close(outPipe[1]);
        return e;
    }
    if (pipe2(statusPipe, O_CLOEXEC) != 0) {
        const int e = errno;
        for (int fd : {outPipe[0], outPipe[1], errPipe[0], errPipe[1]})
            ::close(fd);
        return e;
    }

    // Ranks orphaned by a launcher that dies come here to be reaped (see the class comment).
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);

    ExecRequest r;
    fillExecRequest(r, argv, env);
    r.parent = getpid();
    r.out = outPipe[1];
    r.err = errPipe[1];
    r.status = statusPipe[1];

    // Not posix_spawn: the child must set its parent-death signal before exec. Not fork either: it
    // copies the page tables of this process, whose memory grows with the run it supervises, and a
    // supervisor starts a probe for every host every few seconds. The child shares this process's
    // memory until it execs (as posix_spawn's does), on a stack of its own, while this thread waits:
    // a start costs the exec, not the size of the supervisor.
    sigset_t all;
    sigset_t previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    const std::unique_ptr<char[]> childStack(new char[kChildStackBytes]); // 16-byte aligned, as new's
    const pid_t pid = ::clone(&childMain, childStack.get() + kChildStackBytes, CLONE_VM | CLONE_VFORK | SIGCHLD, &r);
    const int forkError = errno;
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    ::close(outPipe[1]);
    ::close(errPipe[1]);
    ::close(statusPipe[1]);

    const int rc = pid < 0 ? forkError : execResult(statusPipe[0], pid);
    ::close(statusPipe[0]);
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

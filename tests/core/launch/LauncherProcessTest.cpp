// The launcher as a real child process: what it starts with (session, standard streams, signals,
// environment), how a failed start is reported, and that it ends with the process that started it.

#include "core/launch/LauncherProcess.h"
#include "core/launch/ProcessTable.h"
#include "tests/support/WaitUntil.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

using namespace parallax;
using parallax::testing::waitUntil;

namespace {

std::string readProc(pid_t pid, const std::string& what) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/" + what, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A field of /proc/PID/status ("SigBlk" -> "0000000000000000").
std::string statusField(pid_t pid, const std::string& field) {
    std::istringstream in(readProc(pid, "status"));
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(field + ":", 0) == 0)
            return line.substr(line.find_first_not_of(" \t", field.size() + 1));
    return {};
}

bool hasSignal(const std::string& hexMask, int signal) {
    return (std::stoull(hexMask, nullptr, 16) >> (signal - 1)) & 1ULL;
}

std::string link(pid_t pid, int fd) {
    char target[256] = {};
    const ssize_t n = readlink(("/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd)).c_str(), target,
                               sizeof target - 1);
    return n > 0 ? std::string(target, static_cast<size_t>(n)) : std::string();
}

long sessionOf(pid_t pid) {
    const std::string stat = readProc(pid, "stat");
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));
    std::string state;
    long ppid = 0, pgrp = 0, session = 0;
    fields >> state >> ppid >> pgrp >> session;
    return session;
}

// Reads a pipe to its end.
std::string drain(int fd) {
    std::string out;
    char buf[4096];
    for (;;) {
        const ssize_t n = read(fd, buf, sizeof buf);
        if (n > 0) {
            out.append(buf, static_cast<size_t>(n));
        } else if (n == 0) {
            return out;
        } else if (errno == EAGAIN || errno == EINTR) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        } else {
            return out;
        }
    }
}

} // namespace

TEST(LauncherProcess, StartsInASessionOfItsOwnWithDefaultSignalsNullStdinAndPipes) {
    // What the supervisor may have set for itself must not reach the launcher.
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    struct sigaction oldPipe {}, oldInt {};
    sigaction(SIGPIPE, &ignore, &oldPipe);
    sigaction(SIGINT, &ignore, &oldInt);
    sigset_t blocked, previous;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGUSR1);
    sigaddset(&blocked, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &blocked, &previous);

    LauncherProcess p;
    const int rc = p.start({"sleep", "30"}, {{"PARALLAX_LAUNCH_TEST", "forty two"}});
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    sigaction(SIGPIPE, &oldPipe, nullptr);
    sigaction(SIGINT, &oldInt, nullptr);
    ASSERT_EQ(rc, 0);
    ASSERT_GT(p.pid(), 0);
    // exec has happened when start returns: the process is sleep, not a copy of this test.
    EXPECT_EQ(readProc(p.pid(), "comm"), "sleep\n");

    EXPECT_EQ(sessionOf(p.pid()), p.pid()) << "own session";
    EXPECT_EQ(link(p.pid(), 0), "/dev/null");
    EXPECT_EQ(link(p.pid(), 1).rfind("pipe:", 0), 0u) << link(p.pid(), 1);
    EXPECT_EQ(link(p.pid(), 2).rfind("pipe:", 0), 0u) << link(p.pid(), 2);
    EXPECT_NE(link(p.pid(), 1), link(p.pid(), 2)) << "stdout and stderr are two pipes";
    EXPECT_EQ(std::stoull(statusField(p.pid(), "SigBlk"), nullptr, 16), 0u) << "nothing blocked";
    const std::string ignored = statusField(p.pid(), "SigIgn");
    EXPECT_FALSE(hasSignal(ignored, SIGPIPE)) << ignored;
    EXPECT_FALSE(hasSignal(ignored, SIGINT)) << ignored;

    const std::string env = readProc(p.pid(), "environ");
    EXPECT_NE(env.find(std::string("PARALLAX_LAUNCH_TEST=forty two") + '\0'), std::string::npos);
    if (const char* path = std::getenv("PATH")) {
        EXPECT_NE(env.find(std::string("PATH=") + path + '\0'), std::string::npos) << "the rest is inherited";
    }

    const pid_t pid = p.pid();
    p.killAll();
    ASSERT_TRUE(p.status().has_value());
    EXPECT_FALSE(processIsRunning(pid));
    EXPECT_TRUE(WIFSIGNALED(*p.status()));
}

TEST(LauncherProcess, OutputAndExitStatusComeBack) {
    LauncherProcess p;
    ASSERT_EQ(p.start({"sh", "-c", "echo to-out; echo to-err >&2; exit 3"}, {}), 0);
    EXPECT_EQ(drain(p.stdoutFd()), "to-out\n");
    EXPECT_EQ(drain(p.stderrFd()), "to-err\n");
    ASSERT_TRUE(waitUntil([&] { return p.tryWait().has_value(); }, std::chrono::seconds(10)));
    EXPECT_TRUE(WIFEXITED(*p.status()));
    EXPECT_EQ(WEXITSTATUS(*p.status()), 3);
}

TEST(LauncherProcess, AFailedStartIsItsErrno) {
    LauncherProcess missing;
    EXPECT_EQ(missing.start({"parallax-no-such-launcher"}, {}), ENOENT);
    EXPECT_EQ(missing.pid(), -1);
    EXPECT_EQ(missing.stdoutFd(), -1);
    LauncherProcess absolute;
    EXPECT_EQ(absolute.start({"/nonexistent/mpirun", "-np", "2"}, {}), ENOENT);
    LauncherProcess notExecutable;
    EXPECT_EQ(notExecutable.start({"/etc/passwd"}, {}), EACCES);
    LauncherProcess empty;
    EXPECT_EQ(empty.start({}, {}), EINVAL);
    // The children that failed to exec were reaped: none is left as a zombie.
    int status = 0;
    EXPECT_EQ(waitpid(-1, &status, WNOHANG), -1);
    EXPECT_EQ(errno, ECHILD);
}

// The supervisor killed with SIGKILL: a launcher that never started its ranks (here one that only
// sleeps) must not stay behind.
TEST(LauncherProcess, EndsWhenTheProcessThatStartedItIsKilled) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t supervisor = fork();
    ASSERT_GE(supervisor, 0);
    if (supervisor == 0) {
        close(fds[0]);
        LauncherProcess launcher;
        const pid_t pid = launcher.start({"sleep", "1000"}, {}) == 0 ? launcher.pid() : -1;
        if (write(fds[1], &pid, sizeof pid) != static_cast<ssize_t>(sizeof pid))
            _exit(1);
        for (;;)
            pause();
    }
    close(fds[1]);
    pid_t launcher = -1;
    ASSERT_EQ(read(fds[0], &launcher, sizeof launcher), static_cast<ssize_t>(sizeof launcher));
    close(fds[0]);
    ASSERT_GT(launcher, 0);
    ASSERT_TRUE(processIsRunning(launcher));

    ASSERT_EQ(kill(supervisor, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(supervisor, &status, 0), supervisor);
    const bool gone = waitUntil(
        [&] {
            int s = 0;
            waitpid(launcher, &s, WNOHANG); // reparented here when this process is a subreaper
            return !processIsRunning(launcher);
        },
        std::chrono::seconds(10), std::chrono::milliseconds(20));
    if (!gone)
        kill(launcher, SIGKILL);
    EXPECT_TRUE(gone) << "the launcher (sleep 1000, pid " << launcher << ") outlived the process that started it";
}

// The sweep that ends what is left of runs on a host, run here as ssh runs it there: what it ends,
// what it leaves, and how its answers are read.
#include "core/launch/CommandRun.h"
#include "core/launch/HostSweep.h"
#include "core/launch/ProcessTable.h"

#include "tests/support/Process.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace parallax {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

using Scratch = parallax::testing::TempDir;

// A process of its own process group, ended (with its group) at the end of the test.
class Spawned {
public:
    explicit Spawned(std::vector<std::string> argv) {
        m_pid = ::fork();
        if (m_pid == 0) {
            ::setpgid(0, 0);
            std::vector<char*> args;
            for (std::string& a : argv) args.push_back(a.data());
            args.push_back(nullptr);
            ::execv(args[0], args.data());
            ::_exit(127);
        }
        ::setpgid(m_pid, m_pid);
    }
    ~Spawned() {
        ::kill(-m_pid, SIGKILL);
        ::waitpid(m_pid, nullptr, 0);
    }
    pid_t pid() const { return m_pid; }
    bool running() {
        int status = 0;
        return ::waitpid(m_pid, &status, WNOHANG) == 0;
    }

private:
    pid_t m_pid = -1;
};

// Children of `pid` (from /proc), for the "orted"'s rank.
std::vector<pid_t> childrenOf(pid_t pid) {
    std::vector<pid_t> out;
    for (const auto& e : fs::directory_iterator("/proc")) {
        const std::string name = e.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream in(e.path() / "stat");
        std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const size_t close = stat.rfind(')');
        if (close == std::string::npos) continue;
        std::istringstream rest(stat.substr(close + 2));
        char state = 0;
        pid_t parent = 0;
        rest >> state >> parent;
        if (parent == pid) out.push_back(std::stoi(name));
    }
    return out;
}

// Sweeps here; a sweep that finds another one running on this host (another test's, run beside
// this one) tries again once that one is done, as the next cleanup would.
CommandResult sweepHere(const std::vector<std::string>& dirs) {
    for (;;) {
        CommandResult r = runCommands({sweepCommand(dirs)}, kSweepLimitHere).front();
        if (r.exit_code != kSweepBusyCode) return r;
        std::this_thread::sleep_for(100ms);
    }
}

TEST(HostSweep, EndsTheRunsProcessesAndTheOrtedAboveThemAndNothingElse) {
    Scratch s;
    const std::string dir = s.path() + "/runs/7";
    // An "orted" (a shell under that name) whose rank names the run folder, as mpirun's do.
    const std::string orted = s.path() + "/orted";
    fs::create_symlink("/bin/sh", orted);
    Spawned daemon({orted, "-c", "sh -c 'while :; do sleep 0.2; done' rank --run-dir \"$0\"; :", dir});
    // The run folder's longer cousin, and another run: neither is the run's.
    Spawned cousin({"/bin/sh", "-c", "while :; do sleep 0.2; done", "x", "--run-dir", dir + "-2"});
    Spawned other({"/bin/sh", "-c", "while :; do sleep 0.2; done", "x", "--run-dir", s.path() + "/runs/8"});
    std::this_thread::sleep_for(300ms);
    ASSERT_EQ(childrenOf(daemon.pid()).size(), 1u);

    const CommandResult r = sweepHere({dir});
    const SweepOutcome o = readSweep(r, kSweepLimitHere);
    ASSERT_EQ(o.kind, SweepOutcome::Kind::Swept) << r.out << r.err;
    EXPECT_EQ(o.ended, 2) << r.out; // the rank and its orted
    std::this_thread::sleep_for(200ms);
    EXPECT_FALSE(daemon.running());
    EXPECT_TRUE(cousin.running());
    EXPECT_TRUE(other.running());
}

// Processes come and go while the sweep reads /proc: one that is gone before it is read is no
// failure of the sweep.
TEST(HostSweep, ProcessesThatExitWhileItReadsAreNoFailure) {
    Scratch s;
    Spawned churn({"/bin/sh", "-c", "while :; do /bin/true & /bin/true & wait; done"});
    for (int i = 0; i < 15; ++i) {
        const CommandResult r = sweepHere({s.path() + "/runs/1"});
        const SweepOutcome o = readSweep(r, kSweepLimitHere);
        ASSERT_EQ(o.kind, SweepOutcome::Kind::Swept) << "attempt " << i << ": " << r.out << r.err;
        EXPECT_EQ(o.ended, 0);
    }
    EXPECT_TRUE(churn.running());
}

TEST(HostSweep, NoAnswerAndAnErrorAnsweredAreToldApart) {
    CommandResult swept;
    swept.exit_code = 1; // what else it printed does not matter once its line is there
    swept.out = "@px ended 3\n";
    swept.err = "awk: cannot open /proc/123/cmdline\n";
    EXPECT_EQ(readSweep(swept, 40s).kind, SweepOutcome::Kind::Swept);
    EXPECT_EQ(readSweep(swept, 40s).ended, 3);

    CommandResult refused;
    refused.exit_code = 255;
    refused.err = "ssh: connect to host node2 port 22: Connection refused\n";
    const SweepOutcome none = readSweep(refused, 40s);
    EXPECT_EQ(none.kind, SweepOutcome::Kind::NoAnswer);
    EXPECT_EQ(none.error, "ssh: connect to host node2 port 22: Connection refused");

    CommandResult silent;
    silent.timed_out = true;
    EXPECT_EQ(readSweep(silent, 40s).kind, SweepOutcome::Kind::NoAnswer);
    EXPECT_EQ(readSweep(silent, 40s).error, "no answer over ssh within 40 s");

    CommandResult broken;
    broken.exit_code = 127;
    broken.err = "sh: 1: timeout: not found\n";
    const SweepOutcome failed = readSweep(broken, 40s);
    EXPECT_EQ(failed.kind, SweepOutcome::Kind::Failed);
    EXPECT_NE(failed.error.find("timeout: not found"), std::string::npos) << failed.error;
}

} // namespace
} // namespace parallax

// The test hosts themselves: each one answers ssh under its own name, faults do what the cluster
// tests rely on (a stopped sshd refuses at once, a link taken down times out), and nothing of a
// fixture outlives it, not even when the process that made it is killed.

#include "tests/support/Process.h"
#include "tests/support/TestHosts.h"
#include "tests/support/WaitUntil.h"

#include "core/util/Files.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <optional>
#include <set>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

using namespace parallax;
using namespace parallax::testing;

namespace {

using Clock = std::chrono::steady_clock;

#define SKIP_WITHOUT_TEST_HOSTS()                                                                                      \
    do {                                                                                                               \
        const std::string why = TestHosts::available();                                                                \
        if (!why.empty())                                                                                              \
            GTEST_SKIP() << why;                                                                                       \
    } while (0)

std::string trimmed(std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
        text.pop_back();
    return text;
}

double secondsSince(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

bool anyCommand(const std::vector<HostProcess>& processes, const std::string& part) {
    return std::any_of(processes.begin(), processes.end(),
                       [&](const HostProcess& p) { return contains(p.command, part); });
}

std::string commands(const std::vector<HostProcess>& processes) {
    std::string out;
    for (const HostProcess& p : processes)
        out += std::to_string(p.pid) + " " + p.command + "\n";
    return out;
}

// The "State:" line of /proc/<pid>/status, "" once the process is gone.
std::string statusOf(pid_t pid) {
    try {
        const std::string status = readFile("/proc/" + std::to_string(pid) + "/status");
        const size_t at = status.find("State:");
        return at == std::string::npos ? "" : status.substr(at, status.find('\n', at) - at);
    } catch (const FileError&) {
        return "";
    }
}

// Alive and not a zombie (an ended process whose parent, init for orphans, has not reaped it yet).
bool running(pid_t pid) {
    const std::string state = statusOf(pid);
    return !state.empty() && state.find("zombie") == std::string::npos;
}

// Every word of `ip -o link show`, `ip netns list` and /etc/hosts, to look for a fixture's names.
std::string systemNames() {
    return runProcess({"ip", "-o", "link", "show"}).output + runProcess({"ip", "netns", "list"}).output +
           readFile("/etc/hosts");
}

} // namespace

TEST(TestHosts, EachHostAnswersSshUnderItsOwnNameAndAddress) {
    SKIP_WITHOUT_TEST_HOSTS();
    TestHosts hosts(2);
    ASSERT_EQ(hosts.names().size(), 2u);
    EXPECT_NE(hosts.name(0), hosts.name(1));
    for (int i = 0; i < 2; ++i) {
        const ProcessResult name = hosts.run(i, {"hostname"});
        ASSERT_EQ(name.exitCode, 0) << name.output;
        EXPECT_EQ(trimmed(name.output), hosts.name(i));
        // Only its own interface and loopback: what runs there is on that host's network.
        const ProcessResult addresses = hosts.run(i, {"ip", "-o", "-4", "addr", "show"});
        EXPECT_TRUE(contains(addresses.output, "inet " + hosts.address(i) + "/24")) << addresses.output;
        EXPECT_EQ(std::count(addresses.output.begin(), addresses.output.end(), '\n'), 2) << addresses.output;
        EXPECT_TRUE(anyCommand(hosts.processes(i), "sshd")) << commands(hosts.processes(i));
        // Its name resolves here, from /etc/hosts, for programs that look names up (mpirun does).
        const ProcessResult lookup = runProcess({"getent", "ahostsv4", hosts.name(i)});
        EXPECT_EQ(lookup.output.substr(0, lookup.output.find(' ')), hosts.address(i)) << lookup.output;
    }
    // Host a reaches host b by name through the shared ssh config, as mpirun's daemons do when
    // they start each other.
    const ProcessResult hop =
        hosts.run(0, {"ssh", "-F", hosts.sshConfigPath(), hosts.name(1), "cat /proc/sys/kernel/hostname"});
    ASSERT_EQ(hop.exitCode, 0) << hop.output;
    EXPECT_EQ(trimmed(hop.output), hosts.name(1));
    // Arguments arrive as they were given, one each, nothing expanded by the remote shell.
    const ProcessResult args = hosts.run(1, {"printf", "[%s]", "a b", "$HOME", "it's", "*"});
    EXPECT_EQ(args.output, "[a b][$HOME][it's][*]");
}

TEST(TestHosts, MpirunStartsRanksOnEveryHost) {
    SKIP_WITHOUT_TEST_HOSTS();
    TestHosts hosts(2);
    std::vector<std::string> argv = {"mpirun", "-np", "4", "--host", hosts.name(0) + ":2," + hosts.name(1) + ":2"};
    const std::vector<std::string> mca = hosts.mpirunArgs();
    argv.insert(argv.end(), mca.begin(), mca.end());
    argv.insert(argv.end(), {"cat", "/proc/sys/kernel/hostname"});
    const ProcessResult r = runProcess(argv);
    ASSERT_EQ(r.exitCode, 0) << r.output;
    std::multiset<std::string> names;
    std::istringstream lines(r.output);
    std::string line;
    while (std::getline(lines, line))
        names.insert(line);
    EXPECT_EQ(names, (std::multiset<std::string>{hosts.name(0), hosts.name(0), hosts.name(1), hosts.name(1)}))
        << r.output;
    for (int i = 0; i < 2; ++i)
        EXPECT_TRUE(waitUntil([&] { return hosts.processes(i).size() == 1; }, std::chrono::seconds(10)))
            << "the daemons end with mpirun:\n" << commands(hosts.processes(i));
}

TEST(TestHosts, StoppedSshdRefusesAtOnceAndStartsAgain) {
    SKIP_WITHOUT_TEST_HOSTS();
    TestHosts hosts(2);
    hosts.stopSshd(0);
    const auto start = Clock::now();
    const ProcessResult refused = hosts.run(0, {"true"});
    EXPECT_LT(secondsSince(start), 2.0);
    EXPECT_EQ(refused.exitCode, 255);
    EXPECT_TRUE(contains(refused.output, "Connection refused")) << refused.output;
    EXPECT_FALSE(anyCommand(hosts.processes(0), "sshd")) << commands(hosts.processes(0));
    EXPECT_EQ(hosts.run(1, {"true"}).exitCode, 0) << "the other host still answers";

    hosts.startSshd(0);
    const ProcessResult again = hosts.run(0, {"hostname"});
    ASSERT_EQ(again.exitCode, 0) << again.output;
    EXPECT_EQ(trimmed(again.output), hosts.name(0)) << "a restarted sshd is on the same host";
}

TEST(TestHosts, LinkDownTimesOutAndLinkUpAnswersAgain) {
    SKIP_WITHOUT_TEST_HOSTS();
    TestHosts hosts(2);
    ASSERT_EQ(hosts.run(0, {"true"}).exitCode, 0);
    hosts.linkDown(0);
    const auto start = Clock::now();
    const ProcessResult cut = hosts.run(0, {"true"});
    const double waited = secondsSince(start);
    EXPECT_EQ(cut.exitCode, 255);
    EXPECT_TRUE(contains(cut.output, "timed out")) << cut.output;
    EXPECT_GT(waited, 4.5) << "ConnectTimeout 5 ends it, not an error";
    // From the other host too: its packets to host a vanish.
    const ProcessResult fromB =
        hosts.run(1, {"ssh", "-F", hosts.sshConfigPath(), "-o", "ConnectTimeout=2", hosts.name(0), "true"});
    EXPECT_TRUE(contains(fromB.output, "timed out")) << fromB.output;

    hosts.linkUp(0);
    const ProcessResult back = hosts.run(0, {"hostname"});
    ASSERT_EQ(back.exitCode, 0) << back.output;
    EXPECT_EQ(trimmed(back.output), hosts.name(0));
    const ProcessResult toB =
        hosts.run(0, {"ssh", "-F", hosts.sshConfigPath(), hosts.name(1), "cat /proc/sys/kernel/hostname"});
    EXPECT_EQ(trimmed(toB.output), hosts.name(1)) << "host a routes to host b again";
}

TEST(TestHosts, DelaySlowsEveryPacketOfTheHost) {
    SKIP_WITHOUT_TEST_HOSTS();
    TestHosts hosts(1);
    const std::string why = hosts.delayUnavailable();
    if (!why.empty()) {
        EXPECT_THROW(hosts.delay(0, 100), std::runtime_error);
        GTEST_SKIP() << why;
    }
    auto timed = [&] {
        const auto start = Clock::now();
        EXPECT_EQ(hosts.run(0, {"true"}).exitCode, 0);
        return secondsSince(start);
    };
    const double before = timed();
    hosts.delay(0, 200);
    // An ssh login takes several round trips, each 200 ms longer now.
    EXPECT_GT(timed(), before + 0.6);
    hosts.delay(0, 0);
    EXPECT_LT(timed(), before + 0.3);
}

TEST(TestHosts, TwoFixturesAtOnceDoNotCollide) {
    SKIP_WITHOUT_TEST_HOSTS();
    TestHosts first(1);
    TestHosts second(1);
    EXPECT_NE(first.name(0), second.name(0));
    EXPECT_NE(first.bridge(), second.bridge());
    EXPECT_NE(first.subnet(), second.subnet());
    EXPECT_NE(first.folder(), second.folder());
    EXPECT_EQ(trimmed(first.run(0, {"hostname"}).output), first.name(0));
    EXPECT_EQ(trimmed(second.run(0, {"hostname"}).output), second.name(0));
}

TEST(TestHosts, NothingOfAFixtureOutlivesIt) {
    SKIP_WITHOUT_TEST_HOSTS();
    const bool hadSshFolder = pathExists(std::string(std::getenv("HOME") ? std::getenv("HOME") : "/root") + "/.ssh");
    const std::string hostsBefore = readFile("/etc/hosts");
    std::vector<std::string> names;
    std::string bridge, folder;
    std::vector<pid_t> pids;
    std::optional<TestHosts> hosts(std::in_place, 2);
    names = hosts->names();
    bridge = hosts->bridge();
    folder = hosts->folder();
    // A session still running at teardown goes too.
    BackgroundProcess session =
        startProcess({"ssh", "-F", hosts->sshConfigPath(), hosts->name(1), "sleep 3597"}, "/dev/null");
    ASSERT_TRUE(waitUntil([&] { return anyCommand(hosts->processes(1), "sleep 3597"); }, std::chrono::seconds(10)));
    for (int i = 0; i < 2; ++i)
        for (const HostProcess& p : hosts->processes(i))
            pids.push_back(p.pid);
    EXPECT_TRUE(contains(systemNames(), names[0]));
    EXPECT_TRUE(contains(systemNames(), bridge));
    hosts.reset();
    EXPECT_NE(session.wait(), 0) << "the session ended with its host";

    const std::string left = systemNames();
    for (const std::string& name : names)
        EXPECT_FALSE(contains(left, name)) << name << " is left:\n" << left;
    EXPECT_FALSE(contains(left, bridge)) << left;
    EXPECT_FALSE(pathExists(folder));
    for (pid_t pid : pids)
        EXPECT_FALSE(running(pid)) << "process " << pid << " of a host is left: " << statusOf(pid);
    EXPECT_EQ(readFile("/etc/hosts"), hostsBefore);
    EXPECT_EQ(pathExists(std::string(std::getenv("HOME") ? std::getenv("HOME") : "/root") + "/.ssh"), hadSshFolder)
        << "root's ~/.ssh is not touched";
}

TEST(TestHosts, LeftoversOfAKilledProcessAreRemovedByTheNextFixture) {
    SKIP_WITHOUT_TEST_HOSTS();
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    // A child makes a host, starts a session there and is killed mid-test: its namespace, veth,
    // bridge, folder and the session's processes stay behind.
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        ::close(fds[0]);
        try {
            TestHosts hosts(1);
            startProcess({"ssh", "-F", hosts.sshConfigPath(), hosts.name(0), "sleep 3598"}, "/dev/null");
            waitUntil([&] { return anyCommand(hosts.processes(0), "sleep 3598"); }, std::chrono::seconds(10));
            const std::string line = hosts.name(0) + " " + hosts.bridge() + " " + hosts.folder() + "\n";
            if (::write(fds[1], line.data(), line.size()) < 0)
                ::_exit(2);
            ::raise(SIGKILL); // while `hosts` lives: no destructor runs
        } catch (...) {
            ::_exit(3);
        }
        ::_exit(4);
    }
    ::close(fds[1]);
    std::string line;
    char buf[512];
    ssize_t n = 0;
    while ((n = ::read(fds[0], buf, sizeof buf)) > 0)
        line.append(buf, static_cast<size_t>(n));
    ::close(fds[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "child status " << status;
    std::istringstream fields(line);
    std::string name, bridge, folder;
    fields >> name >> bridge >> folder;
    ASSERT_FALSE(folder.empty()) << line;
    ASSERT_TRUE(contains(systemNames(), name)) << "the killed fixture left its namespace";
    ASSERT_TRUE(pathExists(folder));
    ASSERT_FALSE(processesMatching("sleep 3598").empty()) << "and its session";

    TestHosts next(1);
    const std::string left = systemNames();
    EXPECT_FALSE(contains(left, name)) << left;
    EXPECT_FALSE(contains(left, bridge)) << left;
    EXPECT_FALSE(pathExists(folder));
    // The session's remote end is killed; its ssh client, in this machine's namespace, ends with it.
    EXPECT_TRUE(waitUntil([] { return processesMatching("sleep 3598").empty(); }, std::chrono::seconds(10)));
    EXPECT_EQ(trimmed(next.run(0, {"hostname"}).output), next.name(0));
}

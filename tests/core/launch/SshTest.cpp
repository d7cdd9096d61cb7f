#include "core/launch/CommandRun.h"
#include "core/launch/Ssh.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <csignal>
#include <thread>
#include <unistd.h>

using namespace parallax;

TEST(Ssh, EveryRemoteArgumentIsQuotedOnceForTheRemoteShell) {
    EXPECT_EQ(remoteCommandLine({"sh", "-c", "echo $HOME; rm -rf /", "a b", "it's"}),
              "sh -c 'echo $HOME; rm -rf /' 'a b' 'it'\\''s'");
    SshSettings s;
    s.user = "alice";
    s.port = 2222;
    s.identity_file = "/k";
    s.jump_host = "login";
    s.config_file = "/cfg";
    s.options = {"ServerAliveInterval=5"};
    SshOptions o;
    o.connect_timeout_s = 3;
    EXPECT_EQ(sshCommand("node1", s, {"true"}, o),
              (std::vector<std::string>{"ssh", "-l", "alice", "-p", "2222", "-i", "/k", "-J", "login", "-F", "/cfg", "-o",
                                        "ServerAliveInterval=5", "-o", "BatchMode=yes", "-o", "ConnectTimeout=3",
                                        "node1", "--", "true"}));
    o.control_path = "/tmp/c/0";
    o.master = true;
    o.alive_interval_s = 2;
    const std::vector<std::string> master = sshCommand("node1", {}, {}, o);
    EXPECT_EQ(master, (std::vector<std::string>{"ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=3", "-o",
                                                "ServerAliveInterval=2", "-o", "ServerAliveCountMax=2", "-S",
                                                "/tmp/c/0", "-M", "-o", "ControlPersist=no", "-N", "node1"}));
    // With a command there, the master runs it (no -N).
    const std::vector<std::string> named = sshCommand("node1", {}, {"sh", "-c", "x", "/runs/7"}, o);
    EXPECT_EQ(std::count(named.begin(), named.end(), "-N"), 0);
    EXPECT_EQ(named.back(), "sh -c x /runs/7");
}

// A stop request (a byte on the pipe, as a signal handler writes) gives every command SIGTERM once;
// one that traps it finishes its own way and is waited for.
// Each cause of an unreachable host gets its own fix, a password only where keys are the matter.
TEST(Ssh, TheRemedyFollowsSshsComplaint) {
    EXPECT_EQ(sshRemedy("ssh: Could not resolve hostname gpu7: Temporary failure in name resolution", "gpu7"),
              "the name gpu7 does not resolve here: check its spelling, /etc/hosts, DNS, or a Host entry in "
              "~/.ssh/config");
    EXPECT_EQ(sshRemedy("ssh: connect to host 10.0.0.7 port 22: Connection refused", "10.0.0.7"),
              "nothing answers ssh there: start sshd on 10.0.0.7, or set its port (ssh.port in the profile, or "
              "~/.ssh/config)");
    EXPECT_EQ(sshRemedy("ssh: connect to host gpu7 port 22: No route to host", "gpu7"),
              "check that gpu7 is up and reachable from this machine's network");
    EXPECT_NE(sshRemedy("Host key verification failed.", "gpu7").find("connect once with `ssh gpu7`"), std::string::npos);
    EXPECT_EQ(sshRemedy("root@gpu7: Permission denied (publickey).", "gpu7"),
              "check that `ssh gpu7 true` works here without a password (a key in the agent or the profile's "
              "ssh.identity_file)");
}

TEST(CommandRun, AStopRequestTerminatesTheCommandsAndWaitsForThem) {
    int stop[2];
    ASSERT_EQ(pipe(stop), 0);
    // Once the shell has set its trap.
    std::thread request([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        (void)!write(stop[1], "s", 1);
    });
    const auto start = std::chrono::steady_clock::now();
    const std::vector<CommandResult> r = runCommands(
        {{"sleep", "30"}, {"sh", "-c", "trap 'echo cleaned; exit 7' TERM; while :; do sleep 0.05; done"}},
        std::chrono::seconds(20), {}, stop[0]);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    request.join();
    close(stop[0]);
    close(stop[1]);
    EXPECT_LT(took, 10.0);
    EXPECT_TRUE(r[0].stopped);
    EXPECT_EQ(r[0].exit_code, 128 + SIGTERM);
    EXPECT_FALSE(r[0].timed_out);
    EXPECT_TRUE(r[1].stopped);
    EXPECT_EQ(r[1].exit_code, 7);
    EXPECT_EQ(r[1].out, "cleaned\n");
}

TEST(CommandRun, RunsAtOnceAndEndsWhatOutlivesTheTimeout) {
    const auto start = std::chrono::steady_clock::now();
    const std::vector<CommandResult> r = runCommands(
        {{"sh", "-c", "echo out; echo err >&2; exit 3"}, {"sleep", "30"}, {"sleep", "30"}, {"no-such-program-here"}},
        std::chrono::milliseconds(800));
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(took, 5.0) << "the two sleeps were waited for one after the other, or not ended";
    EXPECT_EQ(r[0].exit_code, 3);
    EXPECT_EQ(r[0].out, "out\n");
    EXPECT_EQ(r[0].err, "err\n");
    EXPECT_TRUE(r[1].timed_out);
    EXPECT_TRUE(r[2].timed_out);
    EXPECT_NE(r[3].start_error.find("no-such-program-here"), std::string::npos);
}

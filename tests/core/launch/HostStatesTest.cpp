// The supervisor's word on each host of a run from what the HostWatch sees (given here as looks),
// and the sweep of a run's hosts at its end.
#include "core/launch/HostStates.h"
#include "core/launch/HostWatch.h"
#include "core/launch/RunHostSweep.h"

#include "tests/core/launch/RecordedNotices.h"
#include "tests/support/Process.h"

#include <gtest/gtest.h>

#include <thread>

#include <stdlib.h>
#include <unistd.h>

using namespace parallax;
using namespace std::chrono_literals;
using Clock = HostStates::Clock;

namespace {

HostWatch::Look look(const std::string& name, std::chrono::milliseconds silent, const std::string& error = {},
                     double slowestMs = 40) {
    HostWatch::Look h;
    h.name = name;
    h.silent = silent;
    h.last_error = error;
    h.slowest_ms = slowestMs;
    h.status.host = name;
    return h;
}

struct Hosts {
    explicit Hosts(int64_t timeoutS)
        : states(timeoutS, notices, [this](const HostStatus& h) { recorded.push_back(h.host + " " + hostStateName(h.state)); },
                 [](const std::string& host) { return host == "node2" ? std::string("rank 1") : "its ranks"; }) {}
    parallax::testing::RecordedNotices notices;
    std::vector<std::string> recorded;
    HostStates states;
};

const Clock::time_point t0 = Clock::time_point{} + 1h;

} // namespace

TEST(HostStates, AHostFallsSilentAnswersAgainAndIsRecordedWhenItChanges) {
    Hosts h(30);
    EXPECT_FALSE(h.states.review({look("node1", 0ms), look("node2", 0ms)}, t0, true));
    EXPECT_EQ(h.recorded, (std::vector<std::string>{"node1 answering", "node2 answering"}));
    EXPECT_TRUE(h.notices.said.empty());

    h.states.review({look("node1", 0ms), look("node2", 5s)}, t0 + 1s, true);
    EXPECT_TRUE(h.notices.said.empty()) << "5 s is not silence yet";
    h.states.review({look("node1", 0ms), look("node2", 7s, "Connection timed out")}, t0 + 2s, true);
    EXPECT_EQ(h.notices.last(), "warn: node2 silent for 7 s (Connection timed out); the run fails if it stays silent "
                                "for 30 s");
    EXPECT_EQ(h.recorded.back(), "node2 silent");
    EXPECT_EQ(h.recorded.size(), 3u) << "only the host that changed";
    EXPECT_EQ(h.states.states().at("node2"), HostState::Silent);

    h.states.review({look("node1", 0ms), look("node2", 0ms)}, t0 + 3s, true);
    EXPECT_EQ(h.notices.last(), "info: node2 answers again");
    // Every 10 s every host is recorded again.
    h.states.review({look("node1", 0ms), look("node2", 0ms)}, t0 + 10s, true);
    EXPECT_EQ(h.recorded.size(), 6u);
}

TEST(HostStates, AHostSilentPastTheTimeoutEndsTheRunOnce) {
    Hosts h(30);
    h.states.review({look("node1", 0ms), look("node2", 0ms)}, t0, true);
    const std::optional<std::string> lost = h.states.review({look("node1", 0ms), look("node2", 31s)}, t0 + 1s, true);
    ASSERT_TRUE(lost);
    EXPECT_EQ(*lost, "node2 has not answered for 31 s (rank 1 run there): the run was ended on every host");
    EXPECT_EQ(h.notices.last(), "error: " + *lost);
    EXPECT_EQ(h.states.states().at("node2"), HostState::Lost);
    EXPECT_FALSE(h.states.review({look("node1", 0ms), look("node2", 32s)}, t0 + 2s, true)) << "said once";
}

TEST(HostStates, ALostHostDoesNotEndARunThatIsStoppingAlready) {
    Hosts h(5);
    EXPECT_FALSE(h.states.review({look("node1", 6s)}, t0, false));
    EXPECT_EQ(h.states.states().at("node1"), HostState::Lost);
    EXPECT_EQ(h.notices.count("error"), 0u);
}

TEST(HostStates, AnSshTooSlowForTheTimeoutIsSaidOncePerHost) {
    Hosts h(5);
    h.states.review({look("node1", 0ms, "", 2500), look("node2", 0ms, "", 400)}, t0, true);
    ASSERT_EQ(h.notices.said.size(), 1u);
    EXPECT_EQ(h.notices.said[0], "warn: ssh to node1 takes 2.5 s to answer a probe: launch.host_timeout_s = 5 is too "
                                 "tight for the probes alone (set it to at least 10 s); meanwhile the ranks' output "
                                 "from node1 counts as its sign of life too");
    h.states.review({look("node1", 0ms, "", 3000)}, t0 + 1s, true);
    EXPECT_EQ(h.notices.said.size(), 1u);
}

TEST(RunHostSweep, AHostThatCannotBeReachedIsKeptForALaterCleanup) {
    parallax::testing::TempDir dir;
    RunStore store(dir.path() + "/parallax.db");
    NewRun nr;
    nr.name = "swept";
    const int64_t run = store.createRun(nr);
    ClusterProfile cluster;
    cluster.hosts = {"127.0.0.1:2"};
    cluster.ssh.port = 1; // nothing listens there: refused at once
    parallax::testing::RecordedNotices notices;
    std::vector<std::string> errors;
    const bool pending = sweepRunHosts(store, cluster, run, dir.path() + "/runs/1", notices,
                                       [&](const std::exception& e) { errors.push_back(e.what()); });
    EXPECT_TRUE(pending);
    EXPECT_TRUE(errors.empty());
    ASSERT_EQ(notices.said.size(), 1u);
    EXPECT_EQ(notices.said[0].rfind("warn: 127.0.0.1: cannot end the run's processes there now (", 0), 0u)
        << notices.said[0];
    EXPECT_NE(notices.said[0].find("that is done as soon as it answers again (parallax-cli cleanup)"),
              std::string::npos);
    const std::vector<PendingCleanup> kept = store.pendingCleanups();
    ASSERT_EQ(kept.size(), 1u);
    EXPECT_EQ(kept[0].run, run);
    EXPECT_EQ(kept[0].host, "127.0.0.1");
    EXPECT_EQ(kept[0].run_dir, dir.path() + "/runs/1");
}

// The watch costs little between probes: it looks at the hosts at most every kPollEvery however
// often the loop calls it, and starts the hosts' probes spread over the period, not in one turn.
TEST(HostWatch, ProbesAreSpreadOverThePeriodAndPollsAreBounded) {
    ClusterProfile cluster;
    cluster.hosts = {"a.invalid", "b.invalid", "c.invalid", "d.invalid"};
    char folder[] = "/tmp/parallax-watch-XXXXXX";
    ASSERT_NE(::mkdtemp(folder), nullptr);
    {
        HostWatch watch(cluster, std::string(folder) + "/ctl", {}, std::chrono::milliseconds(2000));
        const auto& hosts = watch.hosts();
        ASSERT_EQ(hosts.size(), 4u);
        for (size_t i = 1; i < hosts.size(); ++i)
            EXPECT_EQ(hosts[i].next_probe - hosts[i - 1].next_probe, std::chrono::milliseconds(500)) << i;
        const auto start = HostWatch::Clock::now();
        for (int i = 0; i < 20000; ++i) watch.poll();
        const auto took = HostWatch::Clock::now() - start;
        EXPECT_LE(watch.looks(), 1 + took / HostWatch::kPollEvery) << "polls that looked: " << watch.looks();
        EXPECT_GE(watch.looks(), 1);
    }
    ::rmdir(folder);
}

// Probes that came due in one late turn (a loop held up for longer than the period) start then, and
// each host keeps its place in the period afterwards: they do not stay bunched in one turn.
TEST(HostWatch, ProbesThatCameDueInOneLateTurnKeepTheirPlaces) {
    ClusterProfile cluster;
    cluster.hosts = {"a.invalid", "b.invalid", "c.invalid", "d.invalid"};
    char folder[] = "/tmp/parallax-watch-XXXXXX";
    ASSERT_NE(::mkdtemp(folder), nullptr);
    {
        HostWatch watch(cluster, std::string(folder) + "/ctl", {}, std::chrono::milliseconds(2000));
        const auto before = watch.hosts().front().next_probe;
        std::this_thread::sleep_for(std::chrono::milliseconds(2100)); // every host's first probe is due
        watch.poll();
        const auto& hosts = watch.hosts();
        for (const HostWatch::Host& h : hosts) EXPECT_TRUE(h.probe != nullptr) << h.name << "'s probe did not start";
        // Host i's probes stay at i / 4 of the period: the first two periods on (its next place past the
        // late turn), the others one period on.
        const auto now = HostWatch::Clock::now();
        for (size_t i = 0; i < hosts.size(); ++i) {
            const auto offset = std::chrono::milliseconds(500 * static_cast<int64_t>(i));
            EXPECT_EQ(hosts[i].next_probe - before, offset + std::chrono::milliseconds(i == 0 ? 4000 : 2000)) << i;
            EXPECT_GT(hosts[i].next_probe, now) << i;
        }
    }
    ::rmdir(folder);
}

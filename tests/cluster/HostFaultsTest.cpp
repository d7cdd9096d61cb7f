// What goes wrong with hosts at 3 a.m., done for real to test hosts: a host whose sshd is down at
// launch, a host cut off mid-run (its link set down), a stop across hosts, logins that take seconds,
// runs that leave a host unswept. Each is named within seconds, a slow host is not taken for a dead
// one, and afterwards no process of the run is left on any host.

#include "core/spec/SpecIO.h"
#include "core/store/RunStore.h"
#include "tests/cluster/ClusterSupport.h"
#include "tests/support/Process.h"
#include "tests/support/TestHosts.h"
#include "tests/support/WaitUntil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <thread>
#include <future>
#include <atomic>

using namespace parallax;
using namespace parallax::testing;

namespace {

using Clock = std::chrono::steady_clock;


struct Fixture {
    TempDir tmp;
    TestHosts hosts{2};
    std::string store = tmp.path() + "/parallax.db";
    std::string profile = tmp.path() + "/hosts.toml";
    Fixture() { std::ofstream(profile) << clusterProfile(hosts, 1); }

    void expectNothingLeftAnywhere(std::chrono::seconds within) {
        for (int i = 0; i < 2; ++i)
            EXPECT_TRUE(waitUntil([&] { return onlySshdLeft(hosts, i); }, within))
                << hosts.name(i) << " still runs:\n" << commands(hosts.processes(i));
        EXPECT_TRUE(waitUntil([&] { return processesMatching(store + ".runs").empty(); }, within))
            << "an mpirun or worker of the run is left on this machine";
    }
};

TEST(HostFaults, AHostWhoseSshdIsDownIsNamedAndNothingStarts) {
    if (const std::string why = TestHosts::available(); !why.empty()) GTEST_SKIP() << why;
    Fixture f;
    f.hosts.stopSshd(1);
    const std::string spec = f.tmp.path() + "/dead.toml";
    std::ofstream(spec) << longSpec("dead-host", f.profile, 30);
    const Clock::time_point start = Clock::now();
    const ProcessResult r = runProcess({cli(), "--store", f.store, "run", spec});
    const double took = std::chrono::duration<double>(Clock::now() - start).count();
    EXPECT_LT(took, 10.0);
    EXPECT_EQ(r.exitCode, 4) << r.output;
    EXPECT_NE(r.output.find("the hosts or Slurm are not ready; nothing was started"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(f.hosts.name(1) + ": ssh: connect to host"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("Connection refused"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find(f.hosts.name(0) + ":"), std::string::npos) << "the healthy host is not blamed: " << r.output;
    // No run was created, no rank started anywhere.
    EXPECT_TRUE(RunStore(f.store).listRuns().empty());
    EXPECT_TRUE(onlySshdLeft(f.hosts, 0)) << commands(f.hosts.processes(0));
    // `check` says the same, host by host.
    const ProcessResult check = runProcess({cli(), "--store", f.store, "check", spec});
    EXPECT_EQ(check.exitCode, 4) << check.output;
    EXPECT_NE(check.output.find(f.hosts.name(1) + "  "), std::string::npos) << check.output;
    EXPECT_NE(check.output.find("problem: " + f.hosts.name(1) + ": ssh:"), std::string::npos) << check.output;
}

TEST(HostFaults, AWorkerMissingOnTheHostsIsNamedBeforeAnythingStarts) {
    if (const std::string why = TestHosts::available(); !why.empty()) GTEST_SKIP() << why;
    Fixture f;
    const std::string profile = f.tmp.path() + "/elsewhere.toml";
    std::ofstream(profile) << "worker = \"/opt/nowhere/parallax-worker\"\n" << clusterProfile(f.hosts, 1);
    const std::string spec = f.tmp.path() + "/missing.toml";
    std::ofstream(spec) << longSpec("missing-worker", profile, 30);
    const ProcessResult r = runProcess({cli(), "--store", f.store, "run", spec});
    EXPECT_EQ(r.exitCode, 4) << r.output;
    for (int i = 0; i < 2; ++i)
        EXPECT_NE(r.output.find(f.hosts.name(i) + ": there is no parallax-worker at /opt/nowhere/parallax-worker"),
                  std::string::npos)
            << r.output;
    EXPECT_TRUE(RunStore(f.store).listRuns().empty());
}

TEST(HostFaults, AHostCutOffMidRunFailsTheRunAndNothingIsLeftOnceItAnswers) {
    if (const std::string why = TestHosts::available(); !why.empty()) GTEST_SKIP() << why;
    Fixture f;
    const std::string spec = f.tmp.path() + "/cut.toml";
    std::ofstream(spec) << longSpec("cut-off", f.profile, 12);
    BackgroundProcess run = startProcess({cli(), "--store", f.store, "run", spec}, f.tmp.path() + "/cut.out");
    const std::optional<RunRecord> started = waitForSteps(f.store, "cut-off", 3);
    ASSERT_TRUE(started.has_value()) << run.output();
    ASSERT_FALSE(onlySshdLeft(f.hosts, 1)) << "no rank runs on " << f.hosts.name(1);

    f.hosts.linkDown(1);
    const Clock::time_point cut = Clock::now();
    const int code = run.wait();
    const double took = std::chrono::duration<double>(Clock::now() - cut).count();
    EXPECT_LT(took, 30.0) << run.output();
    EXPECT_EQ(code, 1) << run.output();
    RunStore db(f.store);
    const RunRecord ended = *db.run(started->id);
    EXPECT_EQ(ended.state, RunState::Failed);
    EXPECT_NE(ended.exit_reason.find(f.hosts.name(1) + " has not answered for"), std::string::npos)
        << ended.exit_reason;
    EXPECT_NE(ended.exit_reason.find("rank 1 run"), std::string::npos) << ended.exit_reason;
    // It was said while it happened, and the host's state is kept.
    LogQuery q;
    q.match = "silent";
    EXPECT_GE(db.logCount(started->id, q), 1);
    bool lost = false;
    for (const HostStatus& h : db.hostStatuses(started->id))
        lost = lost || (h.host == f.hosts.name(1) && h.state == HostState::Lost);
    EXPECT_TRUE(lost);

    // The link returns: within 30 s no process of the run is left on any host.
    f.hosts.linkUp(1);
    f.expectNothingLeftAnywhere(std::chrono::seconds(30));
    EXPECT_TRUE(waitUntil([&] { return RunStore(f.store).pendingCleanups().empty(); }, std::chrono::seconds(30)))
        << "the cleanup due on " << f.hosts.name(1) << " was not done";
}

TEST(HostFaults, AStopAcrossHostsLeavesNothingOnAnyHost) {
    if (const std::string why = TestHosts::available(); !why.empty()) GTEST_SKIP() << why;
    Fixture f;
    const std::string spec = f.tmp.path() + "/stop.toml";
    std::ofstream(spec) << longSpec("stopped", f.profile, 30);
    BackgroundProcess run = startProcess({cli(), "--store", f.store, "run", spec}, f.tmp.path() + "/stop.out");
    const std::optional<RunRecord> started = waitForSteps(f.store, "stopped", 3);
    ASSERT_TRUE(started.has_value()) << run.output();
    const ProcessResult stop = runProcess({cli(), "--store", f.store, "stop", "stopped", "--wait"});
    EXPECT_EQ(stop.exitCode, 3) << stop.output;
    EXPECT_EQ(run.wait(), 3) << run.output();
    EXPECT_EQ(RunStore(f.store).run(started->id)->state, RunState::Stopped);
    f.expectNothingLeftAnywhere(std::chrono::seconds(30));
}

// launch.on_host_failure = "resume": a dp=2 run across both hosts loses the second (its link cut) at
// a step past its first checkpoint. Within a minute it goes on as a new run, resumed from the
// checkpoint on the host that answers as dp=1 with the same global batch, and from there it trains
// the numbers of one process that was never interrupted.
std::string elasticSpec(const std::string& name, const std::string& launch) {
    return "name = " + tomlString(name) +
           "\n[model]\nkind = \"gpt\"\npreset = \"tiny\"\n[data]\nkind = \"synthetic\"\n"
           "[train]\nsteps = 200\nglobal_batch = 4\nmicro_batch = 2\nlr = 1e-3\nwarmup = 2\nseed = 77\n"
           "checkpoint_every = 5\n[parallel]\n" + launch + "[telemetry]\ndevice_sample_ms = 1000\nspan_every = 0\n";
}

TEST(HostFaults, ALostHostCostsTheRunNothingItGoesOnWithTheSameNumbers) {
    if (const std::string why = TestHosts::available(); !why.empty()) GTEST_SKIP() << why;
    Fixture f;
    const CliRun one = runThroughCli(f.tmp.path(), "uninterrupted", elasticSpec("uninterrupted", "dp = 1\n"));
    ASSERT_EQ(one.result.exitCode, 0) << one.result.output;
    ASSERT_EQ(one.losses.size(), 200u) << one.result.output;

    const std::string spec = f.tmp.path() + "/elastic.toml";
    std::ofstream(spec) << elasticSpec("elastic", "dp = 2\n[launch]\ntarget = \"hosts\"\ncluster = " +
                                                      tomlString(f.profile) +
                                                      "\nhost_timeout_s = 5\non_host_failure = \"resume\"\n");
    BackgroundProcess run = startProcess({cli(), "--store", f.store, "run", spec}, f.tmp.path() + "/elastic.out");
    const std::optional<RunRecord> started = waitForSteps(f.store, "elastic", 12);
    ASSERT_TRUE(started.has_value()) << run.output();
    ASSERT_FALSE(onlySshdLeft(f.hosts, 1)) << "no rank runs on " << f.hosts.name(1);

    f.hosts.linkDown(1);
    const Clock::time_point cut = Clock::now();
    std::optional<RunRecord> next;
    const bool continued = waitUntil(
        [&] {
            try {
                RunStore db(f.store);
                for (const RunRecord& r : db.listRuns())
                    if (r.parent_run == started->id && r.state == RunState::Running && !db.metrics(r.id).empty())
                        next = r;
            } catch (const StoreError&) {
            }
            return next.has_value();
        },
        std::chrono::seconds(120), std::chrono::milliseconds(250));
    const double took = std::chrono::duration<double>(Clock::now() - cut).count();
    ASSERT_TRUE(continued) << run.output();
    EXPECT_LT(took, 60.0) << "it trains again " << took << " s after the host was cut off";
    std::printf("the continuation trains %.1f s after the host was cut off\n", took);
    // The host comes back while the continuation goes on without it (it is not taken back).
    f.hosts.linkUp(1);
    EXPECT_EQ(run.wait(), 0) << run.output();

    RunStore db(f.store);
    const RunRecord first = *db.run(started->id);
    EXPECT_EQ(first.state, RunState::Failed);
    EXPECT_NE(first.exit_reason.find(f.hosts.name(1) + " has not answered for"), std::string::npos)
        << first.exit_reason;
    EXPECT_NE(first.exit_reason.find("launch.on_host_failure = \"resume\": it goes on from the checkpoint at step "),
              std::string::npos)
        << first.exit_reason;
    EXPECT_NE(first.exit_reason.find("on " + f.hosts.name(0) + " as dp=1"), std::string::npos) << first.exit_reason;
    const RunRecord second = *db.run(next->id);
    EXPECT_EQ(second.state, RunState::Succeeded) << second.exit_reason;
    EXPECT_EQ(second.world_size, 1);
    EXPECT_EQ(second.hosts, std::vector<std::string>{f.hosts.name(0)});
    const RunSpec continuedSpec = readSpecFile(second.run_dir + "/spec.toml");
    EXPECT_EQ(continuedSpec.parallel.dp, 1);
    EXPECT_EQ(continuedSpec.train.global_batch, 4);
    EXPECT_EQ(continuedSpec.launch.exclude_hosts, std::vector<std::string>{f.hosts.name(1)});

    // show presents the two as one run in two segments.
    const std::string show = runProcess({cli(), "--store", f.store, "show", std::to_string(second.id)}).output;
    EXPECT_NE(show.find("run " + std::to_string(first.id) + " (steps 0-"), std::string::npos) << show;
    EXPECT_NE(show.find(", failed) -> *run " + std::to_string(second.id) + " (steps "), std::string::npos) << show;
    EXPECT_NE(show.find("-199, succeeded)"), std::string::npos) << show;

    // From the checkpoint on, its losses are those of the uninterrupted process.
    const std::vector<StepEvent> steps = db.metrics(second.id);
    ASSERT_FALSE(steps.empty());
    EXPECT_EQ(steps.back().step, 199);
    EXPECT_GE(steps.front().step, 10) << "it starts from a checkpoint of the first run";
    double worst = 0;
    for (const StepEvent& s : steps) {
        const double want = one.losses.at(static_cast<size_t>(s.step));
        worst = std::max(worst, std::abs(s.loss - want) / std::max(1e-12, std::abs(want)));
    }
    EXPECT_LT(worst, 1e-5) << "from step " << steps.front().step;

    // Nothing of either run is left on either host (the lost host's cleanup was due once it answered).
    f.expectNothingLeftAnywhere(std::chrono::seconds(60));
}

// A rank that dies (SIGKILL) on a host that still answers: the run goes on from its checkpoint on
// the same hosts and layout; a second death once launch.max_restarts = 1 is used up fails it, saying so.
TEST(HostFaults, ARankThatDiesGoesOnOnTheSameHostsUntilTheRestartsAreUsed) {
    if (const std::string why = TestHosts::available(); !why.empty()) GTEST_SKIP() << why;
    Fixture f;
    const std::string spec = f.tmp.path() + "/killed.toml";
    std::string text = elasticSpec("killed", "dp = 2\n[launch]\ntarget = \"hosts\"\ncluster = " + tomlString(f.profile) +
                                                 "\non_host_failure = \"resume\"\nmax_restarts = 1\n");
    text.replace(text.find("steps = 200"), 11, "steps = 100000");
    std::ofstream(spec) << text;
    BackgroundProcess run = startProcess({cli(), "--store", f.store, "run", spec}, f.tmp.path() + "/killed.out");
    const std::optional<RunRecord> started = waitForSteps(f.store, "killed", 12);
    ASSERT_TRUE(started.has_value()) << run.output();
    auto killWorkerOn = [&](int host) {
        for (const HostProcess& p : f.hosts.processes(host))
            if (p.command.find("parallax-worker") != std::string::npos) return ::kill(p.pid, SIGKILL) == 0;
        return false;
    };
    ASSERT_TRUE(killWorkerOn(1)) << "no rank runs on " << f.hosts.name(1) << ":\n" << commands(f.hosts.processes(1));
    std::optional<RunRecord> next;
    ASSERT_TRUE(waitUntil(
        [&] {
            try {
                RunStore db(f.store);
                for (const RunRecord& r : db.listRuns())
                    if (r.parent_run == started->id && db.metrics(r.id).size() >= 3) next = r;
            } catch (const StoreError&) {
            }
            return next.has_value();
        },
        std::chrono::seconds(90), std::chrono::milliseconds(250)))
        << run.output();
    RunStore db(f.store);
    const RunRecord first = *db.run(started->id);
    EXPECT_EQ(first.state, RunState::Failed);
    EXPECT_NE(first.exit_reason.find("it goes on from the checkpoint at step "), std::string::npos) << first.exit_reason;
    EXPECT_NE(first.exit_reason.find("as dp=2"), std::string::npos) << first.exit_reason;
    EXPECT_EQ(db.run(next->id)->world_size, 2);
    EXPECT_EQ(readSpecFile(next->run_dir + "/spec.toml").launch.exclude_hosts, std::vector<std::string>{});

    // The second death: the one restart is used.
    ASSERT_TRUE(waitUntil([&] { return killWorkerOn(1); }, std::chrono::seconds(30)));
    EXPECT_EQ(run.wait(), 1) << run.output();
    const RunRecord second = *RunStore(f.store).run(next->id);
    EXPECT_EQ(second.state, RunState::Failed);
    EXPECT_NE(second.exit_reason.find("launch.max_restarts = 1 restart(s) are used up, so it does not go on"),
              std::string::npos)
        << second.exit_reason;
    EXPECT_EQ(RunStore(f.store).listRuns().size(), 2u) << "no third run";
    f.expectNothingLeftAnywhere(std::chrono::seconds(30));
}

// Sweeps running on host i now (their awk, which carries the marker).
int sweepsOn(const TestHosts& hosts, int i) {
    int n = 0;
    for (const HostProcess& p : hosts.processes(i))
        if (p.command.rfind("awk ", 0) == 0 && p.command.find("@px-sweep") != std::string::npos) ++n;
    return n;
}


// Every ssh login to either host takes 4.5 s, longer than a probe's first limit (4 s) and most of
// launch.host_timeout_s = 5: the ranks' output is the hosts' sign of life, the run trains on for
// 40 s until it is stopped, no host is taken for lost, and the slow ssh is said with its figure.
TEST(HostFaults, SlowLoginsCostAHealthyRunNothing) {
    if (const std::string why = TestHosts::available(); !why.empty()) GTEST_SKIP() << why;
    Fixture f;
    f.hosts.slowLogins(0, 4.5);
    f.hosts.slowLogins(1, 4.5);
    const std::string spec = f.tmp.path() + "/slow.toml";
    std::ofstream(spec) << longSpec("slow-logins", f.profile, 5);
    BackgroundProcess run = startProcess({cli(), "--store", f.store, "run", spec}, f.tmp.path() + "/slow.out");
    const std::optional<RunRecord> started = waitForSteps(f.store, "slow-logins", 3);
    ASSERT_TRUE(started.has_value()) << run.output();
    // Long past the old reckoning's end (silence counted from the launch, from probes only).
    std::this_thread::sleep_for(std::chrono::seconds(40));
    const ProcessResult stop = runProcess({cli(), "--store", f.store, "stop", "slow-logins", "--wait"});
    EXPECT_EQ(stop.exitCode, 3) << stop.output;
    EXPECT_EQ(run.wait(), 3) << run.output();
    RunStore db(f.store);
    const RunRecord ended = *db.run(started->id);
    EXPECT_EQ(ended.state, RunState::Stopped) << ended.exit_reason;
    for (const HostStatus& h : db.hostStatuses(ended.id)) EXPECT_NE(h.state, HostState::Lost) << h.host << ": " << h.detail;
    LogQuery q;
    q.match = "\"is too tight for the probes alone\"";
    EXPECT_GE(db.logCount(ended.id, q), 1) << "the slow ssh was not said";
    f.hosts.slowLogins(0, 0);
    f.hosts.slowLogins(1, 0);
    f.expectNothingLeftAnywhere(std::chrono::seconds(60));
}

// Three runs end while host 1 takes 50 s to answer ssh (longer than a sweep is waited for here):
// each leaves it unswept. One cleaner takes them all; on the host at most one sweep runs at any
// moment, however many attempts were given up here; once the host answers quickly again, nothing
// of any run is left on it and no cleanup stays due.
TEST(HostFaults, HostsLeftBySeveralRunsAreSweptOnceAtATime) {
    if (const std::string why = TestHosts::available(); !why.empty()) GTEST_SKIP() << why;
    Fixture f;
    std::vector<BackgroundProcess> runs;
    for (const std::string name : {"left-1", "left-2", "left-3"}) {
        const std::string spec = f.tmp.path() + "/" + name + ".toml";
        std::ofstream(spec) << longSpec(name, f.profile, 300);
        runs.push_back(startProcess({cli(), "--store", f.store, "run", spec}, f.tmp.path() + "/" + name + ".out"));
        ASSERT_TRUE(waitForSteps(f.store, name, 3).has_value()) << runs.back().output();
    }
    f.hosts.slowLogins(1, 50);

    std::atomic<bool> watching{true};
    std::atomic<int> mostSweeps{0}, mostCleaners{0};
    std::thread watch([&] {
        // A cleaner counts once it is seen twice: one started while another holds the lock only
        // looks at the lock and leaves.
        std::set<pid_t> before;
        while (watching) {
            mostSweeps = std::max(mostSweeps.load(), sweepsOn(f.hosts, 1));
            std::set<pid_t> now;
            int cleaners = 0;
            for (pid_t p : processesMatching(" cleanup --wait")) {
                now.insert(p);
                cleaners += before.count(p) > 0;
            }
            before = std::move(now);
            mostCleaners = std::max(mostCleaners.load(), cleaners);
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
        }
    });
    std::vector<std::future<ProcessResult>> stops;
    for (const std::string name : {"left-1", "left-2", "left-3"})
        stops.push_back(std::async(std::launch::async, [&, name] {
            return runProcess({cli(), "--store", f.store, "stop", name, "--wait"});
        }));
    for (auto& s : stops) s.wait();
    for (BackgroundProcess& r : runs) r.wait();
    EXPECT_EQ(RunStore(f.store).pendingCleanups().size(), 3u) << "each run left host 1 unswept";
    // The attempts pile up here while the host is still slow.
    std::this_thread::sleep_for(std::chrono::seconds(30));
    f.hosts.slowLogins(1, 0);
    const bool clean = waitUntil(
        [&] { return RunStore(f.store).pendingCleanups().empty() && onlySshdLeft(f.hosts, 1); },
        std::chrono::seconds(300), std::chrono::seconds(1));
    watching = false;
    watch.join();
    EXPECT_TRUE(clean) << f.hosts.name(1) << " still runs:\n" << commands(f.hosts.processes(1));
    EXPECT_LE(mostSweeps.load(), 1) << "sweeps of one host ran side by side";
    EXPECT_LE(mostCleaners.load(), 1) << "several cleaners of one store ran side by side";
    EXPECT_TRUE(onlySshdLeft(f.hosts, 0)) << commands(f.hosts.processes(0));
}

} // namespace

// The test Slurm itself (tests/support/TestSlurm): it comes up with its nodes idle, srun starts
// tasks and Open MPI ranks (through PMIx), sbatch, squeue and scancel behave as on a cluster, its
// faults do what tests rely on, and nothing of it outlives the fixture. On test hosts it is a
// Slurm of two nodes whose ranks talk across hosts.

#include "tests/support/Process.h"
#include "tests/support/TestHosts.h"
#include "tests/support/TestSlurm.h"
#include "tests/support/WaitUntil.h"

#include "core/telemetry/TelemetryCodec.h"
#include "core/util/Files.h"
#include "core/util/HostName.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

using namespace parallax;
using namespace parallax::testing;
using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;

#define SKIP_WITHOUT_SLURM()                                                                                           \
    do {                                                                                                               \
        const std::string why = TestSlurm::available();                                                                \
        if (!why.empty())                                                                                              \
            GTEST_SKIP() << why;                                                                                       \
    } while (0)

double secondsSince(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
        if (!line.empty())
            out.push_back(line);
    return out;
}

std::string trimmed(std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
        text.pop_back();
    return text;
}

std::string describe(const SlurmCommandResult& r) {
    return "exit code " + std::to_string(r.exitCode) + (r.timedOut ? " (timed out)" : "") + ", output:\n" + r.output;
}

// The ids of the jobs squeue lists (pending, running, completing).
std::vector<std::string> queuedJobs(const TestSlurm& slurm) {
    const SlurmCommandResult r = slurm.run({"squeue", "-h", "-o", "%i"}, 10s);
    return r.exitCode == 0 ? lines(r.output) : std::vector<std::string>{"(squeue failed: " + r.output + ")"};
}

std::string jobState(const TestSlurm& slurm, const std::string& id) {
    const SlurmCommandResult r = slurm.run({"squeue", "-h", "-j", id, "-o", "%T"}, 10s);
    return r.exitCode == 0 ? trimmed(r.output) : "";
}

// The command name (/proc/<pid>/comm) of a live process, "" once it is gone.
std::string commandName(pid_t pid) {
    try {
        return trimmed(readFile("/proc/" + std::to_string(pid) + "/comm"));
    } catch (const FileError&) {
        return "";
    }
}

// Ended: no such process, or a zombie. slurmstepd forks itself away from slurmd, so an ended
// step is init's to reap, which may take a moment.
bool gone(pid_t pid) {
    try {
        const std::string stat = readFile("/proc/" + std::to_string(pid) + "/stat");
        const size_t close = stat.rfind(')');
        return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z';
    } catch (const FileError&) {
        return true;
    }
}

std::vector<pid_t> named(const std::vector<pid_t>& pids, const std::string& name) {
    std::vector<pid_t> out;
    for (pid_t pid : pids)
        if (commandName(pid) == name)
            out.push_back(pid);
    return out;
}

std::string sbatchScript(const std::string& folder, const std::string& name, const std::string& body) {
    const std::string path = joinPath(folder, name);
    std::ofstream(path) << "#!/bin/sh\n" << body;
    return path;
}

// The id sbatch --parsable printed ("12" or "12;cluster").
std::string submittedId(const SlurmCommandResult& r) {
    const std::string line = trimmed(r.output);
    return line.substr(0, line.find(';'));
}

// `scontrol show job ID` once the job has ended (JobState COMPLETED, FAILED, CANCELLED, ...), as
// one who follows a batch job without sacct reads it; "" after `timeout`. sbatch --wait would do,
// but it looks only every few seconds.
std::string endedJob(const TestSlurm& slurm, const std::string& id, std::chrono::seconds timeout) {
    std::string shown;
    const bool ended = waitUntil(
        [&] {
            shown = slurm.run({"scontrol", "show", "job", id}, 10s).output;
            for (const char* state : {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"})
                if (contains(shown, std::string("JobState=") + state + " "))
                    return true;
            return false;
        },
        timeout, 200ms);
    return ended ? shown : "";
}

struct WorkerRun {
    SlurmCommandResult result;
    std::optional<RunStartEvent> start;
    std::optional<RunEndEvent> end;
    std::set<int> ranks; // the labels of the ranks that printed telemetry
};

// parallax-worker under srun: `srunArgs` after "srun --label", then a dp=2 tiny gpt of two steps.
WorkerRun runWorker(const TestSlurm& slurm, const std::string& folder, const std::vector<std::string>& srunArgs) {
    const std::string spec = joinPath(folder, "worker.toml");
    std::ofstream(spec) << "name = \"slurm-fixture\"\n"
                           "[model]\nkind = \"gpt\"\npreset = \"tiny\"\n"
                           "[data]\nkind = \"synthetic\"\n"
                           "[train]\nsteps = 2\nglobal_batch = 4\nmicro_batch = 2\nseed = 7\ncheckpoint_every = 0\n"
                           "[parallel]\ndp = 2\n"
                           "[launch]\ntarget = \"slurm\"\n"
                           "[telemetry]\ndevice_sample_ms = 1000\nspan_every = 0\n";
    const std::string runDir = joinPath(folder, "run");
    createDirectories(runDir);
    std::vector<std::string> argv = {"srun", "--label"};
    argv.insert(argv.end(), srunArgs.begin(), srunArgs.end());
    argv.insert(argv.end(), {buildDir() + "/app/parallax-worker", "--spec", spec, "--run-dir", runDir});
    WorkerRun run;
    run.result = slurm.run(argv, 180s);
    for (const std::string& line : lines(run.result.output)) {
        // "1: @plx {...}": srun's label, then the rank's line.
        const size_t colon = line.find(": ");
        if (colon == std::string::npos || line.find_first_not_of(" 0123456789") != colon)
            continue;
        const DecodedLine decoded = decodeLine(std::string_view(line).substr(colon + 2));
        if (decoded.kind != DecodedLine::Kind::Event)
            continue;
        run.ranks.insert(std::stoi(line.substr(0, colon)));
        if (const auto* start = std::get_if<RunStartEvent>(&decoded.event))
            run.start = *start;
        if (const auto* end = std::get_if<RunEndEvent>(&decoded.event))
            run.end = *end;
    }
    return run;
}

TEST(SlurmFixture, ComesUpWithItsNodeIdleInBothPartitions) {
    SKIP_WITHOUT_SLURM();
    const char* before = std::getenv("SLURM_CONF");
    const std::string confBefore = before ? before : "";
    std::string conf;
    {
        TestSlurm slurm;
        conf = slurm.conf();
        std::printf("test slurm up in %.2f s (slurmctld port %d, slurmd port %d)\n",
                    static_cast<double>(slurm.startupTime().count()) / 1000.0, slurm.controllerPort(),
                    slurm.slurmdPorts().front());
        ASSERT_EQ(slurm.nodeNames().size(), 1u);
        const std::string node = slurm.nodeNames().front();
        const std::string host = hostName();
        EXPECT_EQ(node, host.substr(0, host.find('.')));

        const SlurmCommandResult r = slurm.run({"sinfo", "-h", "-N", "-o", "%N %P %T %c"});
        ASSERT_EQ(r.exitCode, 0) << describe(r);
        const std::string cpus = std::to_string(slurm.cpusPerNode());
        std::vector<std::string> got = lines(r.output);
        std::sort(got.begin(), got.end());
        EXPECT_EQ(got, (std::vector<std::string>{node + " debug* idle " + cpus, node + " small idle " + cpus}))
            << r.output;
        EXPECT_EQ(slurm.nodeState(0), "idle");
        EXPECT_GE(slurm.cpusPerNode(), 4);
        EXPECT_EQ(slurm.partition(), "debug");
        EXPECT_EQ(slurm.smallPartition(), "small");

        // Every command started from the tests reaches this Slurm through the environment.
        const char* now = std::getenv("SLURM_CONF");
        EXPECT_EQ(now ? std::string(now) : "", slurm.conf());
        const SlurmCommandResult config = slurm.run({"scontrol", "show", "config"});
        ASSERT_EQ(config.exitCode, 0) << describe(config);
        EXPECT_TRUE(contains(config.output, "SlurmctldPort           = " + std::to_string(slurm.controllerPort())))
            << config.output;
        EXPECT_TRUE(contains(config.output, "AuthType                = auth/none")) << config.output;
        EXPECT_TRUE(isRegularFile(slurm.controllerLog()));
        EXPECT_TRUE(isRegularFile(slurm.slurmdLog(0)));

        // One SLURM_CONF, so one fixture at a time; a second one starts nothing.
        EXPECT_THROW(TestSlurm second, std::logic_error);
        const char* still = std::getenv("SLURM_CONF");
        EXPECT_EQ(still ? std::string(still) : "", slurm.conf());
        EXPECT_EQ(slurm.nodeState(0), "idle");
    }
    const char* after = std::getenv("SLURM_CONF");
    EXPECT_EQ(after ? std::string(after) : "", confBefore) << "the environment is restored";
    EXPECT_FALSE(pathExists(conf));
}

TEST(SlurmFixture, SrunRunsTasksOnTheNode) {
    SKIP_WITHOUT_SLURM();
    TestSlurm slurm;
    const auto start = Clock::now();
    const SlurmCommandResult r = slurm.run({"srun", "--quiet", "-n", "2", "hostname"});
    std::printf("srun -n 2 hostname: %.2f s\n", secondsSince(start));
    ASSERT_EQ(r.exitCode, 0) << describe(r);
    EXPECT_EQ(lines(r.output), (std::vector<std::string>{hostName(), hostName()})) << r.output;

    // Four tasks fit although the machine may have fewer cores: the node offers cpusPerNode().
    const SlurmCommandResult four =
        slurm.run({"srun", "--quiet", "-n", "4", "--label", "printenv", "SLURM_PROCID", "SLURMD_NODENAME"});
    ASSERT_EQ(four.exitCode, 0) << describe(four);
    std::vector<std::string> got = lines(four.output);
    std::sort(got.begin(), got.end());
    std::vector<std::string> expected;
    for (int i = 0; i < 4; ++i)
        expected.insert(expected.end(), {std::to_string(i) + ": " + slurm.nodeNames().front(),
                                         std::to_string(i) + ": " + std::to_string(i)});
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(got, expected) << four.output;
}

TEST(SlurmFixture, SrunStartsOpenMpiRanksThroughPmix) {
    SKIP_WITHOUT_SLURM();
    TestSlurm slurm;
    const SlurmCommandResult list = slurm.run({"srun", "--mpi=list"});
    ASSERT_EQ(list.exitCode, 0) << describe(list);
    EXPECT_TRUE(contains(list.output, "pmix")) << list.output;

    TempDir dir;
    const auto start = Clock::now();
    const WorkerRun run = runWorker(slurm, dir.path(), {"--mpi=pmix", "-n", "2"});
    std::printf("srun --mpi=pmix -n 2 parallax-worker (2 steps): %.2f s\n", secondsSince(start));
    ASSERT_EQ(run.result.exitCode, 0) << describe(run.result);
    EXPECT_EQ(run.ranks, (std::set<int>{0, 1})) << run.result.output;
    ASSERT_TRUE(run.start) << run.result.output;
    EXPECT_EQ(run.start->world, 2);
    EXPECT_EQ(run.start->hosts, (std::vector<std::string>{hostName(), hostName()}));
    EXPECT_FALSE(run.start->slurm_job.empty()) << "the ranks see SLURM_JOB_ID";
    EXPECT_EQ(run.start->slurm_nodes, slurm.nodeNames().front());
    ASSERT_TRUE(run.end) << run.result.output;
    EXPECT_EQ(run.end->status, "succeeded") << run.end->reason;

    // What launch plans rely on: with MpiDefault=none, as on many clusters, ranks started without
    // --mpi=pmix cannot initialise MPI.
    const WorkerRun without = runWorker(slurm, dir.path(), {"-n", "2"});
    EXPECT_NE(without.result.exitCode, 0) << describe(without.result);
    EXPECT_FALSE(without.end) << without.result.output;
}

TEST(SlurmFixture, SqueueShowsABatchJobAndScancelRemovesIt) {
    SKIP_WITHOUT_SLURM();
    TestSlurm slurm;
    const std::string script = sbatchScript(slurm.folder(), "sleeper.sh", "sleep 300\n");
    const SlurmCommandResult submitted =
        slurm.run({"sbatch", "--parsable", "-o", joinPath(slurm.folder(), "sleeper-%j.out"), script});
    ASSERT_EQ(submitted.exitCode, 0) << describe(submitted);
    const std::string id = submittedId(submitted);
    ASSERT_FALSE(id.empty()) << submitted.output;
    EXPECT_EQ(queuedJobs(slurm), std::vector<std::string>{id});

    const auto submittedAt = Clock::now();
    ASSERT_TRUE(waitUntil([&] { return jobState(slurm, id) == "RUNNING"; }, 20s)) << jobState(slurm, id);
    std::printf("sbatch to RUNNING: %.2f s\n", secondsSince(submittedAt));
    std::vector<pid_t> steps;
    ASSERT_TRUE(waitUntil(
        [&] {
            steps = named(TestSlurm::processesOf(slurm.conf()), "slurmstepd");
            return !steps.empty();
        },
        10s));
    EXPECT_TRUE(waitUntil([&] { return !named(TestSlurm::processesOf(slurm.conf()), "sleep").empty(); }, 10s))
        << "the script runs";

    const SlurmCommandResult cancelled = slurm.run({"scancel", id});
    ASSERT_EQ(cancelled.exitCode, 0) << describe(cancelled);
    const auto cancelledAt = Clock::now();
    EXPECT_TRUE(waitUntil([&] { return jobState(slurm, id) != "RUNNING"; }, 5s, 50ms));
    std::printf("scancel to no longer RUNNING (\"%s\"): %.2f s\n", jobState(slurm, id).c_str(),
                secondsSince(cancelledAt));
    EXPECT_TRUE(waitUntil([&] { return queuedJobs(slurm).empty(); }, 8s, 50ms))
        << "still queued: " << queuedJobs(slurm).size() << " job(s)";
    std::printf("scancel to gone from squeue: %.2f s\n", secondsSince(cancelledAt));
    EXPECT_TRUE(waitUntil(
        [&] {
            const std::vector<pid_t> left = TestSlurm::processesOf(slurm.conf());
            return std::all_of(steps.begin(), steps.end(), gone) && named(left, "slurmstepd").empty() &&
                   named(left, "sleep").empty();
        },
        10s))
        << "the job's slurmstepd and sleep end too";
    std::printf("scancel to no slurmstepd: %.2f s\n", secondsSince(cancelledAt));
    const SlurmCommandResult shown = slurm.run({"scontrol", "show", "job", id});
    EXPECT_TRUE(contains(shown.output, "JobState=CANCELLED")) << describe(shown);
}

TEST(SlurmFixture, EndedJobKeepsItsStateInScontrolAndTheCompletionLog) {
    SKIP_WITHOUT_SLURM();
    TestSlurm slurm;
    const std::string script = sbatchScript(slurm.folder(), "fails.sh", "echo on $(hostname)\nexit 3\n");
    const std::string output = joinPath(slurm.folder(), "fails.out");
    const auto start = Clock::now();
    const SlurmCommandResult r = slurm.run({"sbatch", "--parsable", "-o", output, script});
    ASSERT_EQ(r.exitCode, 0) << describe(r);
    const std::string id = submittedId(r);
    ASSERT_FALSE(id.empty()) << r.output;

    const std::string shown = endedJob(slurm, id, 30s);
    ASSERT_FALSE(shown.empty()) << slurm.run({"scontrol", "show", "job", id}).output;
    std::printf("sbatch to ended in scontrol: %.2f s\n", secondsSince(start));
    EXPECT_EQ(trimmed(readFile(output)), "on " + hostName());
    EXPECT_TRUE(contains(shown, "JobState=FAILED ")) << shown;
    EXPECT_TRUE(contains(shown, "ExitCode=3:0")) << shown;
    EXPECT_TRUE(contains(shown, "NodeList=" + slurm.nodeNames().front())) << shown;

    std::string log;
    EXPECT_TRUE(waitUntil(
        [&] {
            log = pathExists(slurm.jobCompletionLog()) ? readFile(slurm.jobCompletionLog()) : "";
            return contains(log, "JobId=" + id + " ");
        },
        10s))
        << log;
    const std::string line = log.substr(log.find("JobId=" + id + " "));
    EXPECT_TRUE(contains(line.substr(0, line.find('\n')), "JobState=FAILED")) << line;
}

TEST(SlurmFixture, SmallPartitionRefusesJobsLargerThanItAtSubmission) {
    SKIP_WITHOUT_SLURM();
    TestSlurm slurm;
    const SlurmCommandResult fits = slurm.run({"srun", "-p", slurm.smallPartition(), "-n", "1", "true"});
    EXPECT_EQ(fits.exitCode, 0) << describe(fits);

    const auto start = Clock::now();
    const SlurmCommandResult tooBig = slurm.run({"srun", "-p", slurm.smallPartition(), "-n", "2", "true"}, 30s);
    EXPECT_FALSE(tooBig.timedOut) << "refused, not left pending: " << describe(tooBig);
    EXPECT_NE(tooBig.exitCode, 0) << describe(tooBig);
    EXPECT_TRUE(contains(tooBig.output, "srun: error: Unable to allocate resources")) << tooBig.output;
    EXPECT_LT(secondsSince(start), 10.0);

    const SlurmCommandResult batch = slurm.run({"sbatch", "-p", slurm.smallPartition(), "-n", "2", "--wrap", "true"});
    EXPECT_NE(batch.exitCode, 0) << describe(batch);
    EXPECT_TRUE(contains(batch.output, "sbatch: error: Batch job submission failed")) << batch.output;
    EXPECT_TRUE(queuedJobs(slurm).empty());
}

TEST(SlurmFixture, StoppedSlurmdIsNoticedAndAStartedOneReturns) {
    SKIP_WITHOUT_SLURM();
    TestSlurm slurm;
    const pid_t before = slurm.slurmdPid(0);
    ASSERT_NE(before, 0);
    slurm.stopSlurmd(0);
    EXPECT_EQ(slurm.slurmdPid(0), 0);
    EXPECT_TRUE(gone(before));
    const auto stopped = Clock::now();
    std::string state;
    EXPECT_TRUE(waitUntil(
        [&] {
            state = slurm.nodeState(0);
            return contains(state, "*") || state.rfind("down", 0) == 0;
        },
        60s, 500ms))
        << "the node is still \"" << state << "\"";
    std::printf("a stopped slurmd is noticed after %.1f s (\"%s\")\n", secondsSince(stopped), state.c_str());

    const auto restart = Clock::now();
    slurm.startSlurmd(0);
    std::printf("a started slurmd is back after %.1f s\n", secondsSince(restart));
    EXPECT_NE(slurm.slurmdPid(0), 0);
    EXPECT_EQ(slurm.nodeState(0), "idle");
    const SlurmCommandResult r = slurm.run({"srun", "-n", "1", "hostname"});
    EXPECT_EQ(r.exitCode, 0) << describe(r);
}

TEST(SlurmFixture, SeveralNodesShareThisMachine) {
    SKIP_WITHOUT_SLURM();
    TestSlurm slurm(2, 2);
    ASSERT_EQ(slurm.nodeNames().size(), 2u);
    const std::vector<int> ports = slurm.slurmdPorts();
    EXPECT_NE(ports[0], ports[1]);
    const SlurmCommandResult r =
        slurm.run({"srun", "--quiet", "-N", "2", "-n", "4", "--label", "printenv", "SLURMD_NODENAME"});
    ASSERT_EQ(r.exitCode, 0) << describe(r);
    std::map<std::string, int> tasks;
    for (const std::string& line : lines(r.output))
        ++tasks[line.substr(line.find(": ") + 2)];
    EXPECT_EQ(tasks, (std::map<std::string, int>{{slurm.nodeNames()[0], 2}, {slurm.nodeNames()[1], 2}})) << r.output;

    // One rank on each node: their PMIx folders lie apart (TmpFS per node), or the second fails.
    TempDir dir;
    const WorkerRun run = runWorker(slurm, dir.path(), {"--mpi=pmix", "-N", "2", "-n", "2"});
    ASSERT_EQ(run.result.exitCode, 0) << describe(run.result);
    ASSERT_TRUE(run.start) << run.result.output;
    EXPECT_EQ(run.start->world, 2);
    const std::string host = hostName();
    EXPECT_EQ(run.start->slurm_nodes, host.substr(0, host.find('.')) + "-[1-2]");
    ASSERT_TRUE(run.end) << run.result.output;
    EXPECT_EQ(run.end->status, "succeeded") << run.end->reason;
}

TEST(SlurmFixture, NothingIsLeftOnceItIsDestroyed) {
    SKIP_WITHOUT_SLURM();
    std::string conf, folder;
    std::vector<int> ports;
    std::vector<pid_t> seen;
    std::optional<BackgroundProcess> attached;
    {
        TestSlurm slurm;
        conf = slurm.conf();
        folder = slurm.folder();
        ports = slurm.slurmdPorts();
        ports.push_back(slurm.controllerPort());
        for (int port : ports)
            EXPECT_FALSE(TestSlurm::portFree(port)) << "port " << port << " is Slurm's while it runs";
        // A batch job and an attached srun, both running when the fixture goes.
        const SlurmCommandResult batch = slurm.run(
            {"sbatch", "--parsable", "-o", "/dev/null", sbatchScript(folder, "sleeper.sh", "sleep 300\n")});
        ASSERT_EQ(batch.exitCode, 0) << describe(batch);
        attached = startProcess({"srun", "-n", "1", "sleep", "300"}, joinPath(folder, "attached.out"));
        ASSERT_TRUE(waitUntil(
            [&] {
                const SlurmCommandResult r = slurm.run({"squeue", "-h", "-t", "RUNNING", "-o", "%i"}, 10s);
                return lines(r.output).size() == 2;
            },
            20s));
        // Each job's slurmstepd and its sleep.
        ASSERT_TRUE(waitUntil(
            [&] {
                seen = TestSlurm::processesOf(conf);
                return named(seen, "slurmstepd").size() == 2 && named(seen, "sleep").size() == 2;
            },
            10s));
        EXPECT_EQ(named(seen, "slurmctld").size(), 1u);
        EXPECT_EQ(named(seen, "slurmd").size(), 1u);
    }
    // The attached srun ends with its job (it is this test's child: reaped here, or killed).
    int status = 0;
    const bool attachedEnded =
        waitUntil([&] { return ::waitpid(attached->pid, &status, WNOHANG) == attached->pid; }, 30s);
    if (!attachedEnded) {
        ::kill(attached->pid, SIGKILL);
        ::waitpid(attached->pid, &status, 0);
    }
    EXPECT_TRUE(attachedEnded) << "the attached srun still runs: " << attached->output();
    EXPECT_EQ(TestSlurm::processesOf(conf), std::vector<pid_t>{});
    for (pid_t pid : seen)
        EXPECT_TRUE(gone(pid)) << pid << " " << commandName(pid) << " is left";
    for (int port : ports)
        EXPECT_TRUE(TestSlurm::portFree(port)) << "port " << port << " is still taken";
    EXPECT_FALSE(pathExists(folder));
}

// Runs `body` in a forked child. While what it made lives, body calls die(text): the text comes
// back and the child is SIGKILLed at once, so that no destructor runs. "" when the child ended
// another way (body threw or returned).
using DieWith = std::function<void(const std::string&)>;
std::string fromKilledChild(const std::function<void(const DieWith&)>& body) {
    int fds[2];
    if (::pipe(fds) != 0)
        return "";
    const pid_t child = ::fork();
    if (child == 0) {
        ::close(fds[0]);
        try {
            body([&](const std::string& text) {
                if (::write(fds[1], text.data(), text.size()) == static_cast<ssize_t>(text.size()))
                    ::raise(SIGKILL);
            });
        } catch (...) {
        }
        ::_exit(3);
    }
    ::close(fds[1]);
    std::string text;
    char buf[512];
    ssize_t n = 0;
    while (child > 0 && (n = ::read(fds[0], buf, sizeof buf)) > 0)
        text.append(buf, static_cast<size_t>(n));
    ::close(fds[0]);
    int status = 0;
    if (child < 0 || ::waitpid(child, &status, 0) != child || !WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
        return "";
    return text;
}

TEST(SlurmFixture, LeftoversOfAKilledProcessAreRemovedByTheNextFixture) {
    SKIP_WITHOUT_SLURM();
    // A child starts a Slurm with a running batch job and is killed mid-test: its daemons die with
    // it, the job's slurmstepd and sleep and the folder stay behind.
    const std::string conf = fromKilledChild([](const DieWith& die) {
        TestSlurm slurm;
        const SlurmCommandResult batch = slurm.run({"sbatch", "-o", "/dev/null", "--wrap", "sleep 300"});
        const auto sleeping = [&] { return !named(TestSlurm::processesOf(slurm.conf()), "sleep").empty(); };
        if (batch.exitCode == 0 && waitUntil(sleeping, 20s))
            die(slurm.conf());
    });
    ASSERT_FALSE(conf.empty()) << "the child started a Slurm and its job";
    ASSERT_TRUE(pathExists(conf)) << "the killed fixture left its folder";
    std::vector<pid_t> left;
    EXPECT_TRUE(waitUntil(
        [&] {
            left = TestSlurm::processesOf(conf);
            return named(left, "slurmctld").empty() && named(left, "slurmd").empty();
        },
        10s))
        << "the daemons die with the process that started them";
    ASSERT_FALSE(named(left, "slurmstepd").empty()) << "the job's step outlives them";
    ASSERT_FALSE(named(left, "sleep").empty());

    TestSlurm next;
    EXPECT_EQ(TestSlurm::processesOf(conf), std::vector<pid_t>{});
    EXPECT_FALSE(pathExists(parentPath(conf)));
    EXPECT_EQ(next.nodeState(0), "idle");
}

TEST(SlurmFixtureOnTestHosts, TwoNodesRunOpenMpiRanksAcrossHosts) {
    SKIP_WITHOUT_SLURM();
    const std::string why = TestHosts::available();
    if (!why.empty())
        GTEST_SKIP() << why;
    const auto start = Clock::now();
    TestHosts hosts(2);
    std::string conf;
    {
        TestSlurm slurm(hosts);
        std::printf("test slurm on 2 test hosts up in %.2f s (%.2f s with the hosts)\n",
                    static_cast<double>(slurm.startupTime().count()) / 1000.0, secondsSince(start));
        conf = slurm.conf();
        EXPECT_EQ(slurm.nodeNames(), hosts.names());

        const SlurmCommandResult names = slurm.run({"srun", "--quiet", "-N", "2", "-n", "2", "--label", "hostname"});
        ASSERT_EQ(names.exitCode, 0) << describe(names);
        std::vector<std::string> got = lines(names.output);
        std::sort(got.begin(), got.end());
        EXPECT_EQ(got, (std::vector<std::string>{"0: " + hosts.name(0), "1: " + hosts.name(1)}));

        TempDir dir;
        const auto workerStart = Clock::now();
        const WorkerRun run = runWorker(slurm, dir.path(), {"--mpi=pmix", "-N", "2", "-n", "2"});
        std::printf("srun --mpi=pmix -N 2 -n 2 parallax-worker (2 steps): %.2f s\n", secondsSince(workerStart));
        ASSERT_EQ(run.result.exitCode, 0) << describe(run.result);
        ASSERT_TRUE(run.start) << run.result.output;
        EXPECT_EQ(run.start->world, 2);
        EXPECT_EQ(run.start->hosts, hosts.names()) << "one rank on each host";
        ASSERT_TRUE(run.end) << run.result.output;
        EXPECT_EQ(run.end->status, "succeeded") << run.end->reason;

        // A batch script on the first host starts the ranks itself: srun there reaches slurmctld
        // on this machine across the bridge.
        const std::string output = joinPath(dir.path(), "batch.out");
        const std::string script =
            sbatchScript(dir.path(), "ranks.sh", "exec srun --quiet --mpi=pmix --label hostname\n");
        const auto batchStart = Clock::now();
        const SlurmCommandResult batch =
            slurm.run({"sbatch", "--parsable", "-N", "2", "-n", "2", "-o", output, script});
        ASSERT_EQ(batch.exitCode, 0) << describe(batch);
        const std::string shown = endedJob(slurm, submittedId(batch), 60s);
        std::printf("sbatch -N 2 of srun --mpi=pmix to ended: %.2f s\n", secondsSince(batchStart));
        EXPECT_TRUE(contains(shown, "JobState=COMPLETED ")) << shown;
        got = lines(readFile(output));
        std::sort(got.begin(), got.end());
        EXPECT_EQ(got, (std::vector<std::string>{"0: " + hosts.name(0), "1: " + hosts.name(1)}));
    }
    std::printf("with teardown: %.2f s\n", secondsSince(start));
    EXPECT_EQ(TestSlurm::processesOf(conf), std::vector<pid_t>{});
    for (int i = 0; i < 2; ++i) {
        const std::vector<HostProcess> left = hosts.processes(i);
        EXPECT_TRUE(left.size() == 1 && left.front().pid == hosts.sshdPid(i))
            << "only the sshd of " << hosts.name(i) << " is left; there are " << left.size() << " process(es)";
    }
}

} // namespace

// No rank outlives its supervisor: killed with SIGKILL, the supervisor cannot end the launch itself,
// so the launcher's parent-death signal must (core/launch/LauncherProcess), and where the launcher
// does not pass it on, each rank's watch over supervisor.alive (trainer/train/SupervisorWatch).

#include "tests/e2e/RunProcesses.h"

#include "core/launch/ProcessTable.h"
#include "core/launch/SupervisorHeartbeat.h"
#include "core/util/Files.h"

#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <thread>

using namespace parallax;
using namespace parallax::testing;
using namespace std::chrono_literals;

namespace {

// A run that prints nothing for a long time once it has started: its first step has 20000
// micro-batches (a minute or more here), no device samples after the first, no spans. Killing the
// supervisor then closes pipes nobody writes to, so nothing but a signal ends the launch.
std::string quietSpec(const std::string& name) {
    return tinyGptSpec(name, "steps = 10\nglobal_batch = 160000\nmicro_batch = 4\nlr = 1e-3\nwarmup = 1\ncheckpoint_every = 0\n",
                       "device_sample_ms = 3600000\nspan_every = 0\n");
}

// Leaves nothing running whatever the test's outcome.
void killAll(const std::string& needle) {
    for (pid_t pid : processesMatching(needle))
        kill(pid, SIGKILL);
}

} // namespace

TEST(SupervisorDeath, ASupervisorKilledWhileTheRanksAreQuietLeavesNoLaunchBehind) {
    TempDir tmp;
    const std::string store = tmp.path() + "/parallax.db";
    const std::string spec = tmp.path() + "/quiet.toml";
    std::ofstream(spec) << quietSpec("quiet");
    BackgroundProcess supervisor = startProcess({cliExecutable(), "--store", store, "run", spec}, tmp.path() + "/cli.out");

    // The loop has begun once the first device sample is stored; then nothing is printed for a
    // whole step.
    const std::optional<RunRecord> run = waitForRun(
        store, "quiet", [](RunStore& db, const RunRecord& r) { return !db.deviceSamples(r.id).empty(); }, 120s);
    ASSERT_TRUE(run.has_value()) << supervisor.output();
    const std::string runDir = run->run_dir;
    ASSERT_EQ(runProcesses(runDir, "mpirun").size(), 1u);
    ASSERT_EQ(runProcesses(runDir, "parallax-worker").size(), 2u);
    {
        RunStore db(store);
        ASSERT_TRUE(db.metrics(run->id).empty()) << "the run was not quiet: a step was printed already";
    }

    ASSERT_EQ(kill(supervisor.pid, SIGKILL), 0);
    EXPECT_EQ(supervisor.wait(), 128 + SIGKILL);
    const bool gone = waitUntil([&] { return processesMatching(runDir).empty(); }, 15s);
    std::string left;
    for (pid_t pid : processesMatching(runDir))
        left += " " + commandName(pid) + " (pid " + std::to_string(pid) + ")";
    killAll(runDir);
    EXPECT_TRUE(gone) << "15 s after the supervisor was killed, still running:" << left;
}

// The ranks outlive their SIGKILLed supervisor long enough to checkpoint (the launcher's SIGTERM
// asks them to): `show` lists that checkpoint, as `resume` would take it.
TEST(SupervisorDeath, ACheckpointWrittenAfterTheSupervisorDiedIsShown) {
    TempDir tmp;
    const std::string store = tmp.path() + "/parallax.db";
    const std::string spec = tmp.path() + "/long.toml";
    // A checkpoint every other step: the ranks write some in the seconds they go on without it.
    std::ofstream(spec) << tinyGptSpec("checkpointed-late",
                                       "steps = 100000\nglobal_batch = 8\nmicro_batch = 4\nlr = 1e-3\nwarmup = 5\n"
                                       "checkpoint_every = 2\n",
                                       "device_sample_ms = 200\n");
    BackgroundProcess supervisor = startProcess({cliExecutable(), "--store", store, "run", spec}, tmp.path() + "/cli.out");
    const std::optional<RunRecord> run = waitForRun(
        store, "checkpointed-late", [](RunStore& db, const RunRecord& r) { return db.metrics(r.id).size() >= 3; },
        120s);
    ASSERT_TRUE(run.has_value()) << supervisor.output();
    ASSERT_EQ(kill(supervisor.pid, SIGKILL), 0);
    supervisor.wait();
    const bool gone = waitUntil([&] { return processesMatching(run->run_dir).empty(); }, 40s);
    killAll(run->run_dir);
    ASSERT_TRUE(gone);
    std::vector<std::string> onDisk;
    ASSERT_TRUE(pathExists(joinPath(run->run_dir, "checkpoints"))) << "no checkpoint was written";
    for (const std::string& name : listDirectory(joinPath(run->run_dir, "checkpoints")))
        if (name.rfind("step_", 0) == 0 && name.find('.') == std::string::npos &&
            pathExists(joinPath(run->run_dir, "checkpoints/" + name + "/manifest.json")))
            onDisk.push_back(name);
    ASSERT_FALSE(onDisk.empty()) << "the ranks wrote no checkpoint once their supervisor was gone";
    const ProcessResult show = runProcess({cliExecutable(), "--store", store, "show", "checkpointed-late"});
    EXPECT_NE(show.output.find("lost"), std::string::npos) << show.output;
    for (const std::string& name : onDisk)
        EXPECT_NE(show.output.find(name), std::string::npos) << name << " is not shown:\n" << show.output;
}

// The ranks under a launcher that passes nothing on: mpirun started here, with a heartbeat file
// that this test writes once and then leaves alone, or removes.
class RanksWithoutSupervisor : public ::testing::Test {
protected:
    void SetUp() override {
        m_runDir = m_tmp.path() + "/run";
        createDirectories(m_runDir);
        m_spec = m_tmp.path() + "/long.toml";
        std::ofstream(m_spec) << longTinyGptSpec("unsupervised");
        setenv("PARALLAX_SUPERVISOR_TIMEOUT_S", "3", 1);
    }
    void TearDown() override {
        unsetenv("PARALLAX_SUPERVISOR_TIMEOUT_S");
        killAll(m_runDir);
    }

    BackgroundProcess startRanks() {
        return startProcess({"mpirun", "-np", "2", "--oversubscribe", "--bind-to", "none", "--tag-output", "-x",
                             "PARALLAX_SUPERVISOR_TIMEOUT_S", "-x", "OMP_NUM_THREADS=1", workerExecutable(), "--spec",
                             m_spec, "--run-dir", m_runDir},
                            m_tmp.path() + "/mpirun.out");
    }

    // Waits until both ranks train (each has printed telemetry); false when mpirun ended first.
    bool ranksTrain(const BackgroundProcess& ranks) {
        bool training = false;
        waitUntil(
            [&] {
                const std::string out = ranks.output();
                training = out.find("[1,0]<stdout>:") != std::string::npos &&
                           out.find("[1,1]<stdout>:") != std::string::npos &&
                           runProcesses(m_runDir, "parallax-worker").size() == 2;
                return training || !processIsRunning(ranks.pid);
            },
            120s);
        return training;
    }

    // The exit code of mpirun once it ends by itself within `limit`; -1 if it did not.
    int exitWithin(BackgroundProcess& ranks, std::chrono::seconds limit) {
        const bool ended = waitUntil([&] { return processesMatching(m_runDir).empty(); }, limit);
        if (!ended) {
            killAll(m_runDir);
            ranks.wait();
            return -1;
        }
        return ranks.wait();
    }

    TempDir m_tmp;
    std::string m_runDir;
    std::string m_spec;
};

TEST_F(RanksWithoutSupervisor, RanksExitWhenTheHeartbeatStopsChanging) {
    SupervisorHeartbeat heartbeat(m_runDir, 200ms);
    BackgroundProcess ranks = startRanks();
    {
        // The supervisor beats while the ranks start, then hangs (or is gone, its launcher alive).
        std::atomic<bool> beating{true};
        std::thread beater([&] {
            while (beating) {
                heartbeat.beat();
                std::this_thread::sleep_for(50ms);
            }
        });
        const bool training = ranksTrain(ranks);
        beating = false;
        beater.join();
        ASSERT_TRUE(training) << ranks.output();
    }
    const int code = exitWithin(ranks, 20s);
    EXPECT_NE(code, -1) << "the ranks still trained 20 s after the heartbeat stopped (timeout 3 s)";
    EXPECT_NE(code, 0);
    const std::string out = ranks.output();
    EXPECT_NE(out.find("the supervisor of this run stopped answering (" + heartbeat.path() + " unchanged for 3 s); "
                       "exiting"),
              std::string::npos)
        << out.substr(out.size() > 3000 ? out.size() - 3000 : 0);
}

TEST_F(RanksWithoutSupervisor, RanksExitWhenTheHeartbeatIsRemoved) {
    setenv("PARALLAX_SUPERVISOR_TIMEOUT_S", "600", 1); // only the removal can end them here
    SupervisorHeartbeat heartbeat(m_runDir);
    BackgroundProcess ranks = startRanks();
    ASSERT_TRUE(ranksTrain(ranks)) << ranks.output();
    heartbeat.finish();
    const int code = exitWithin(ranks, 15s);
    EXPECT_NE(code, -1) << "the ranks still trained 15 s after supervisor.alive was removed";
    const std::string out = ranks.output();
    EXPECT_NE(out.find(heartbeat.path() + " was removed); exiting"), std::string::npos)
        << out.substr(out.size() > 3000 ? out.size() - 3000 : 0);
}

TEST_F(RanksWithoutSupervisor, RanksWithoutAHeartbeatFileAreLeftAlone) {
    BackgroundProcess ranks = startRanks();
    ASSERT_TRUE(ranksTrain(ranks)) << ranks.output();
    std::this_thread::sleep_for(8s); // well past the 3 s timeout
    EXPECT_EQ(runProcesses(m_runDir, "parallax-worker").size(), 2u) << ranks.output();
    EXPECT_EQ(ranks.output().find("stopped answering"), std::string::npos);
    killAll(m_runDir);
    ranks.wait();
}

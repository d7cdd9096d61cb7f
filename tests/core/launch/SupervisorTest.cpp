// The supervisor end to end: a real mpirun (np 2, --oversubscribe) running the fake worker.
#include "core/launch/ProcessTable.h"
#include "core/launch/RawOutput.h"
#include "core/launch/RunFolderImport.h"
#include "core/launch/SpecRejected.h"
#include "core/launch/Supervisor.h"
#include "core/spec/SpecIO.h"
#include "tests/support/StoreDamage.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

using namespace parallax;
namespace fs = std::filesystem;

namespace {

const char* kSpec = R"(name = "fake-e2e"

[model]
kind = "gpt"
preset = "tiny"

[train]
steps = 5
global_batch = 8
micro_batch = 4

[parallel]
dp = 2

[launch]
target = "local"
)";

std::string readFile(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

class SupervisorE2E : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/parallax-supervisor-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        m_dir = tmpl;
        m_store = std::make_unique<RunStore>((m_dir / "parallax.db").string());
        m_specPath = (m_dir / "fake.toml").string();
        std::ofstream(m_specPath) << kSpec;
    }
    void TearDown() override {
        m_store.reset();
        std::error_code ec;
        fs::remove_all(m_dir, ec);
    }

    SupervisorOptions options(const std::vector<std::string>& workerArgs) {
        SupervisorOptions o;
        o.spec_path = m_specPath;
        o.launch.worker = PARALLAX_FAKE_WORKER;
        o.launch.worker_args = workerArgs;
        o.launch.cores = 1; // two ranks on "one core": --oversubscribe
        o.handle_signals = false;
        return o;
    }

    std::vector<LogRow> logs(int64_t run, std::vector<int> ranks = {}) {
        LogQuery q;
        q.ranks = std::move(ranks);
        return m_store->logs(run, q);
    }

    const LogRow* findLog(const std::vector<LogRow>& rows, const std::string& text) {
        for (const LogRow& r : rows) {
            if (contains(r.message, text))
                return &r;
        }
        return nullptr;
    }

    // Both ranks' pids, written by the fake worker, name processes that no longer run.
    void expectNothingLeft(const RunRecord& r) {
        int files = 0;
        for (const auto& entry : fs::directory_iterator(fs::path(r.run_dir) / "pids")) {
            if (entry.path().extension() != ".pid")
                continue;
            ++files;
            const pid_t pid = static_cast<pid_t>(std::stol(readFile(entry.path())));
            ASSERT_GT(pid, 0);
            EXPECT_FALSE(processIsRunning(pid)) << "fake worker pid " << pid << " still runs";
        }
        EXPECT_EQ(files, 2);
    }

    // Waits until both ranks are parked in their wait loop (their line reached the store).
    void waitForWaitingRanks() {
        RunStore reader((m_dir / "parallax.db").string());
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (std::chrono::steady_clock::now() < deadline) {
            for (const RunRecord& r : reader.listRuns()) {
                LogQuery q;
                q.match = "\"waiting for SIGUSR1\"";
                if (reader.logCount(r.id, q) >= 2)
                    return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        FAIL() << "the fake ranks never reported that they wait";
    }

    fs::path m_dir;
    std::string m_specPath;
    std::unique_ptr<RunStore> m_store;
};

} // namespace

TEST_F(SupervisorE2E, SucceededRunStoresTelemetryLogsAndOutput) {
    std::vector<int64_t> progressSteps;
    SupervisorOptions o = options({"--mode", "ok"});
    o.progress_interval = std::chrono::milliseconds(0);
    o.on_progress = [&](const SupervisorProgress& p) {
        ASSERT_TRUE(p.last_step);
        EXPECT_EQ(p.steps_total, 5);
        progressSteps.push_back(p.last_step->step);
    };
    int64_t createdId = 0;
    o.on_created = [&](const RunRecord& r) {
        createdId = r.id;
        EXPECT_EQ(r.state, RunState::Queued);
        EXPECT_TRUE(fs::exists(fs::path(r.run_dir) / "spec.toml"));
    };
    Supervisor supervisor(*m_store, o);
    const RunRecord r = supervisor.run();

    EXPECT_EQ(r.id, createdId);
    EXPECT_EQ(r.state, RunState::Succeeded) << r.exit_reason;
    ASSERT_TRUE(r.exit_code);
    EXPECT_EQ(*r.exit_code, 0);
    EXPECT_EQ(r.name, "fake-e2e");
    EXPECT_EQ(r.world_size, 2);
    EXPECT_EQ(r.hosts, (std::vector<std::string>{"fakehost-0", "fakehost-1"}));
    EXPECT_EQ(r.supervisor_pid, getpid());
    EXPECT_EQ(r.last_step, 4); // steps 0..4
    EXPECT_EQ(r.run_dir, (fs::path(m_store->path() + ".runs") / std::to_string(r.id)).string());
    EXPECT_TRUE(contains(r.launch_command, "mpirun -np 2 --tag-output --oversubscribe"));
    EXPECT_TRUE(contains(r.launch_command, std::string(PARALLAX_FAKE_WORKER) + " --spec " + r.run_dir +
                                               "/spec.toml --run-dir " + r.run_dir));
    EXPECT_EQ(readFile(fs::path(r.run_dir) / "spec.toml"), kSpec);
    EXPECT_FALSE(progressSteps.empty());
    EXPECT_EQ(progressSteps.back(), 4);

    // Telemetry.
    const std::vector<StepEvent> metrics = m_store->metrics(r.id);
    ASSERT_EQ(metrics.size(), 5u);
    EXPECT_EQ(metrics[2].step, 2);
    EXPECT_DOUBLE_EQ(metrics[4].loss, 2.0);
    EXPECT_EQ(m_store->deviceSamples(r.id).size(), 10u);
    EXPECT_EQ(m_store->spans(r.id, 3).size(), 2u);
    ASSERT_EQ(m_store->checkpoints(r.id).size(), 1u);
    EXPECT_EQ(m_store->checkpoints(r.id)[0].step, 5);

    // Plain lines per rank, with their stream, level and host.
    const std::vector<LogRow> rank0 = logs(r.id, {0});
    const LogRow* start0 = findLog(rank0, "rank 0 starting with spec " + r.run_dir + "/spec.toml");
    ASSERT_NE(start0, nullptr);
    EXPECT_EQ(start0->stream, "stdout");
    EXPECT_EQ(start0->level, LogLevel::Info);
    EXPECT_EQ(start0->host, "fakehost-0");
    const LogRow* longLog = findLog(rank0, "long telemetry message");
    ASSERT_NE(longLog, nullptr); // 9 KiB: forwarded by mpirun in chunks, joined again
    EXPECT_EQ(longLog->message, "long telemetry message " + std::string(9000, 'm'));
    EXPECT_EQ(longLog->stream, "telemetry");
    EXPECT_EQ(longLog->rank, 0);

    const std::vector<LogRow> rank1 = logs(r.id, {1});
    const LogRow* warn = findLog(rank1, "rank 1: WARNING");
    ASSERT_NE(warn, nullptr);
    EXPECT_EQ(warn->stream, "stderr");
    EXPECT_EQ(warn->level, LogLevel::Warn);
    EXPECT_EQ(warn->host, "fakehost-1");
    const LogRow* traceback = findLog(rank1, "Traceback");
    ASSERT_NE(traceback, nullptr);
    EXPECT_EQ(traceback->level, LogLevel::Error);
    const LogRow* malformed = findLog(rank1, "malformed telemetry:");
    ASSERT_NE(malformed, nullptr);
    EXPECT_EQ(malformed->level, LogLevel::Warn);
    EXPECT_EQ(malformed->rank, 1);
    EXPECT_TRUE(contains(malformed->message, "truncated")) << malformed->message;
    EXPECT_TRUE(contains(malformed->message, "@plx {\"ev\":\"step\",\"v\":1,\"step\":")) << malformed->message;
    const LogRow* bytes = findLog(rank1, "are not UTF-8");
    ASSERT_NE(bytes, nullptr);
    EXPECT_EQ(bytes->message, "bytes \xEF\xBF\xBD\xEF\xBF\xBD are not UTF-8");
    const LogRow* longLine = findLog(rank1, "long:");
    ASSERT_NE(longLine, nullptr);
    EXPECT_EQ(longLine->message, "long:" + std::string(10000, 'L'));

    // The supervisor's own notices.
    const std::vector<LogRow> own = logs(r.id, {-1});
    const LogRow* started = findLog(own, "started mpirun");
    ASSERT_NE(started, nullptr);
    EXPECT_EQ(started->stream, "supervisor");
    EXPECT_NE(findLog(own, "run succeeded"), nullptr);

    // The raw output, as the launcher printed it, compressed (RawOutput.h).
    ASSERT_EQ(rawOutputFile(r.run_dir), r.run_dir + "/" + kCompressedOutputName);
    const std::string output = readRawOutput(rawOutputFile(r.run_dir));
    EXPECT_TRUE(contains(output, "[1,0]<stdout>:rank 0 starting")) << output.substr(0, 400);
    EXPECT_TRUE(contains(output, "[1,1]<stderr>:rank 1: WARNING"));
    EXPECT_TRUE(contains(output, "\xff\xfe")); // unchanged bytes
    expectNothingLeft(r);
}

TEST_F(SupervisorE2E, RankKilledBySignalFailsTheRun) {
    Supervisor supervisor(*m_store, options({"--mode", "kill"}));
    const RunRecord r = supervisor.run();
    EXPECT_EQ(r.state, RunState::Failed);
    EXPECT_TRUE(contains(r.exit_reason, "rank 1")) << r.exit_reason;
    EXPECT_TRUE(contains(r.exit_reason, "signal 9 (SIGKILL)")) << r.exit_reason;
    ASSERT_TRUE(r.exit_code);
    EXPECT_NE(*r.exit_code, 0);
    const LogRow* final = findLog(logs(r.id, {-1}), "run failed: rank 1");
    ASSERT_NE(final, nullptr);
    EXPECT_EQ(final->level, LogLevel::Error);
    EXPECT_EQ(m_store->metrics(r.id).size(), 5u); // what arrived before the failure is kept
    expectNothingLeft(r);
}

TEST_F(SupervisorE2E, RankExitCodeFailsTheRunNamingRankAndHost) {
    Supervisor supervisor(*m_store, options({"--mode", "exit", "--code", "3"}));
    const RunRecord r = supervisor.run();
    EXPECT_EQ(r.state, RunState::Failed);
    // Open MPI's message names no host: it comes from run_start's host list.
    EXPECT_EQ(r.exit_reason, "rank 1 on fakehost-1 exited with code 3");
    ASSERT_TRUE(r.exit_code);
    EXPECT_EQ(*r.exit_code, 3);
    expectNothingLeft(r);
}

TEST_F(SupervisorE2E, SigtermToTheSupervisorStopsGracefully) {
    SupervisorOptions o = options({"--mode", "stop"});
    o.handle_signals = true;
    Supervisor supervisor(*m_store, o);
    auto result = std::async(std::launch::async, [&] { return supervisor.run(); });
    waitForWaitingRanks();
    ASSERT_EQ(kill(getpid(), SIGTERM), 0);
    ASSERT_EQ(result.wait_for(std::chrono::seconds(60)), std::future_status::ready);
    const RunRecord r = result.get();
    EXPECT_EQ(r.state, RunState::Stopped) << r.exit_reason;
    EXPECT_EQ(r.exit_reason, "checkpointed at step 5");
    ASSERT_TRUE(r.exit_code);
    EXPECT_EQ(*r.exit_code, 0);
    const std::vector<LogRow> own = logs(r.id, {-1});
    const LogRow* requested = findLog(own, "stop requested (SIGTERM): SIGUSR1 to mpirun");
    ASSERT_NE(requested, nullptr);
    EXPECT_EQ(requested->level, LogLevel::Warn);
    expectNothingLeft(r);
}

TEST_F(SupervisorE2E, StopEscalatesWhenTheRanksIgnoreIt) {
    SupervisorOptions o = options({"--mode", "stubborn"});
    o.stop_grace = std::chrono::milliseconds(500);
    o.term_grace = std::chrono::milliseconds(1500);
    Supervisor supervisor(*m_store, o);
    auto result = std::async(std::launch::async, [&] { return supervisor.run(); });
    waitForWaitingRanks();
    supervisor.requestStop();
    ASSERT_EQ(result.wait_for(std::chrono::seconds(60)), std::future_status::ready);
    const RunRecord r = result.get();
    EXPECT_EQ(r.state, RunState::Stopped);
    EXPECT_TRUE(contains(r.exit_reason, "stopped on request (SIGTERM); the ranks were")) << r.exit_reason;
    EXPECT_NE(findLog(logs(r.id, {-1}), "the ranks did not stop within 0.5 s: SIGTERM to mpirun"), nullptr);
    expectNothingLeft(r);
}

TEST_F(SupervisorE2E, SecondStopRequestEscalatesAtOnce) {
    SupervisorOptions o = options({"--mode", "stubborn"});
    o.stop_grace = std::chrono::seconds(120);
    o.term_grace = std::chrono::seconds(120);
    Supervisor supervisor(*m_store, o);
    auto result = std::async(std::launch::async, [&] { return supervisor.run(); });
    waitForWaitingRanks();
    const auto begin = std::chrono::steady_clock::now();
    supervisor.requestStop();
    supervisor.requestStop();
    supervisor.requestStop();
    ASSERT_EQ(result.wait_for(std::chrono::seconds(60)), std::future_status::ready);
    EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(60));
    const RunRecord r = result.get();
    EXPECT_EQ(r.state, RunState::Stopped);
    const std::vector<LogRow> own = logs(r.id, {-1});
    EXPECT_NE(findLog(own, "stop requested again: SIGTERM to mpirun"), nullptr);
    expectNothingLeft(r);
}

TEST_F(SupervisorE2E, MissingLauncher) {
    SupervisorOptions o = options({"--mode", "ok"});
    o.launch.launcher = "/nonexistent/bin/mpirun";
    Supervisor supervisor(*m_store, o);
    const RunRecord r = supervisor.run();
    EXPECT_EQ(r.state, RunState::Failed);
    EXPECT_EQ(r.exit_reason, "launcher not found: /nonexistent/bin/mpirun (install openmpi-bin)");
    ASSERT_TRUE(r.exit_code);
    EXPECT_EQ(*r.exit_code, 127);
}

TEST_F(SupervisorE2E, MissingWorker) {
    SupervisorOptions o = options({});
    o.launch.worker = "/nonexistent/parallax-worker";
    Supervisor supervisor(*m_store, o);
    const RunRecord r = supervisor.run();
    EXPECT_EQ(r.state, RunState::Failed);
    EXPECT_TRUE(contains(r.exit_reason, "could not start /nonexistent/parallax-worker")) << r.exit_reason;
}

TEST_F(SupervisorE2E, InvalidSpecCreatesNoRun) {
    std::ofstream(m_specPath) << "name = \"bad\"\n[parallel]\ndp = 0\n";
    Supervisor supervisor(*m_store, options({"--mode", "ok"}));
    try {
        supervisor.run();
        FAIL() << "expected SpecRejected";
    } catch (const SpecRejected& e) {
        EXPECT_TRUE(hasErrors(e.issues()));
        EXPECT_TRUE(contains(e.what(), "parallel.dp")) << e.what();
    }
    EXPECT_TRUE(m_store->listRuns().empty());

    SupervisorOptions missing = options({});
    missing.spec_path = (m_dir / "absent.toml").string();
    Supervisor second(*m_store, missing);
    EXPECT_THROW(second.run(), SpecError);
    EXPECT_TRUE(m_store->listRuns().empty());
}

TEST_F(SupervisorE2E, ResumeStartsAChildRunFromTheParentsCheckpoints) {
    Supervisor first(*m_store, options({"--mode", "ok"}));
    const RunRecord parent = first.run();
    ASSERT_EQ(parent.state, RunState::Succeeded);

    SupervisorOptions o = options({"--mode", "ok"});
    o.spec_path.clear();
    o.resume_run = parent.id;
    Supervisor second(*m_store, o);
    const RunRecord child = second.run();
    EXPECT_EQ(child.state, RunState::Succeeded) << child.exit_reason;
    ASSERT_TRUE(child.parent_run);
    EXPECT_EQ(*child.parent_run, parent.id);
    EXPECT_NE(child.id, parent.id);
    EXPECT_EQ(child.spec_toml, parent.spec_toml);
    const std::string checkpoints = parent.run_dir + "/checkpoints";
    EXPECT_TRUE(contains(child.launch_command, "--resume " + checkpoints)) << child.launch_command;
    EXPECT_NE(findLog(logs(child.id, {0}), "resuming from " + checkpoints), nullptr);
    EXPECT_NE(findLog(logs(child.id, {-1}), "resuming run " + std::to_string(parent.id)), nullptr);

    // A run without checkpoints cannot be resumed, and nothing is created.
    Supervisor failing(*m_store, options({"--mode", "kill"}));
    const RunRecord failed = failing.run();
    const size_t before = m_store->listRuns().size();
    SupervisorOptions none = options({});
    none.spec_path.clear();
    none.resume_run = failed.id;
    Supervisor third(*m_store, none);
    try {
        third.run();
        FAIL() << "expected an error";
    } catch (const std::runtime_error& e) {
        EXPECT_TRUE(contains(e.what(), "has no checkpoints to resume from")) << e.what();
    }
    EXPECT_EQ(m_store->listRuns().size(), before);
}

TEST_F(SupervisorE2E, LostRunsOfThisHostAreMarkedFirst) {
    NewRun ghost;
    ghost.name = "ghost";
    const int64_t id = m_store->createRun(ghost);
    // A supervisor pid that cannot be alive.
    m_store->markRunning(id, 999999999, "e2e-host");
    SupervisorOptions o = options({"--mode", "ok"});
    o.hostname = "e2e-host";
    Supervisor supervisor(*m_store, o);
    const RunRecord r = supervisor.run();
    EXPECT_EQ(r.state, RunState::Succeeded);
    EXPECT_EQ(r.supervisor_host, "e2e-host");
    EXPECT_EQ(m_store->run(id)->state, RunState::Lost);
}

namespace {

// What a run stored, counted the way a person would compare two runs.
struct StoredRows {
    size_t metrics = 0, devices = 0, spans = 0, checkpoints = 0, rankLogs = 0;
    bool operator==(const StoredRows& o) const {
        return metrics == o.metrics && devices == o.devices && spans == o.spans && checkpoints == o.checkpoints &&
               rankLogs == o.rankLogs;
    }
};

StoredRows storedRows(RunStore& store, int64_t run) {
    StoredRows c;
    c.metrics = store.metrics(run).size();
    c.devices = store.deviceSamples(run).size();
    for (int64_t step : store.spanSteps(run))
        c.spans += store.spans(run, step).size();
    c.checkpoints = store.checkpoints(run).size();
    for (const LogRow& row : store.logs(run))
        c.rankLogs += row.stream != "supervisor";
    return c;
}

std::ostream& operator<<(std::ostream& os, const StoredRows& c) {
    return os << "{metrics " << c.metrics << ", devices " << c.devices << ", spans " << c.spans << ", checkpoints "
              << c.checkpoints << ", rank logs " << c.rankLogs << "}";
}

} // namespace

// Another process holds the store's write lock from the launch until well after the ranks ended.
// The supervisor keeps at most a few rows in memory (spool_above), keeps the rest in output.log
// only, and once the store takes writes again brings every row in: the run stores exactly what
// an undisturbed run of the same spec stores, and ends succeeded, not lost.
TEST_F(SupervisorE2E, AStoreLockedPastTheRunsEndLosesNoRow) {
    const RunRecord reference = Supervisor(*m_store, options({"--mode", "ok"})).run();
    ASSERT_EQ(reference.state, RunState::Succeeded) << reference.exit_reason;
    const StoredRows expected = storedRows(*m_store, reference.id);
    ASSERT_GE(expected.rankLogs, 10u);

    SupervisorOptions o = options({"--mode", "ok"});
    o.spool_above = 3;
    std::promise<void> locked;
    std::promise<void> release;
    std::thread locker;
    // Whatever an assertion does, the lock is released and its thread joined.
    struct Unlock {
        std::promise<void>& release;
        std::thread& locker;
        bool released = false;
        void now() {
            if (!released)
                release.set_value();
            released = true;
        }
        ~Unlock() {
            now();
            if (locker.joinable())
                locker.join();
        }
    } unlock{release, locker};
    o.on_notice = [&](LogLevel::Value, const std::string& message) {
        if (locker.joinable() || !contains(message, "started mpirun"))
            return;
        locker = std::thread([&] {
            RunStore other((m_dir / "parallax.db").string());
            other.beginTransaction();
            locked.set_value();
            release.get_future().wait();
            other.rollback();
        });
        locked.get_future().wait();
    };
    Supervisor supervisor(*m_store, o);
    auto result = std::async(std::launch::async, [&] { return supervisor.run(); });
    // The ranks finish within a couple of seconds; the store stays locked well past that.
    ASSERT_EQ(result.wait_for(std::chrono::seconds(12)), std::future_status::timeout)
        << "the supervisor ended while the store was locked";
    unlock.now();
    ASSERT_EQ(result.wait_for(std::chrono::seconds(60)), std::future_status::ready);
    const RunRecord r = result.get();

    EXPECT_EQ(r.state, RunState::Succeeded) << r.exit_reason;
    EXPECT_EQ(r.last_step, 4); // steps 0..4
    EXPECT_EQ(storedRows(*m_store, r.id), expected);
    EXPECT_NE(findLog(logs(r.id, {-1}), "were imported from it"), nullptr);
    // Everything of output.log is accounted for.
    EXPECT_EQ(m_store->outputOffset(r.id), static_cast<int64_t>(readRawOutput(rawOutputFile(r.run_dir)).size()));
    expectNothingLeft(r);
}

// The store's pages are damaged while the ranks run: the supervisor says so at once, has the ranks
// checkpoint and stop, and ends naming the store and the way back, rather than wait for the store
// for ever. Every line stays in output.log, from which the run comes back into a new store.
TEST_F(SupervisorE2E, DamageWhileTheRanksRunStopsThemAndTheirRunComesBackFromItsFolder) {
    const std::string path = (m_dir / "parallax.db").string();
    Supervisor supervisor(*m_store, options({"--mode", "chatty-stop"}));
    auto result = std::async(std::launch::async, [&] { return supervisor.run(); });
    waitForWaitingRanks();
    test::garbleStorePages(path);
    test::touchStore(path);
    ASSERT_EQ(result.wait_for(std::chrono::seconds(60)), std::future_status::ready)
        << "the supervisor waits for a damaged store";
    std::string said;
    try {
        result.get();
        ADD_FAILURE() << "the run ended as if its store were sound";
    } catch (const StoreDamaged& e) {
        said = e.what();
    }
    EXPECT_TRUE(contains(said, path)) << said;
    EXPECT_TRUE(contains(said, "import")) << said;
    RunRecord ended;
    ended.run_dir = (fs::path(path + ".runs") / std::to_string(supervisor.runId())).string();
    expectNothingLeft(ended);
    // Asked to checkpoint and stop, as on a stop request: the ranks said so in output.log.
    EXPECT_TRUE(contains(readRawOutput(rawOutputFile(ended.run_dir)), "checkpointed at step"));

    // The way back: the run's folder into a new store, with every line and its end.
    RunStore fresh((m_dir / "new.db").string());
    const std::vector<std::string> lines = importRunFolders(fresh, ended.run_dir);
    ASSERT_EQ(lines.size(), 1u);
    const std::vector<RunRecord> runs = fresh.listRuns();
    ASSERT_EQ(runs.size(), 1u) << lines[0];
    EXPECT_EQ(runs[0].state, RunState::Stopped) << runs[0].exit_reason;
    EXPECT_EQ(runs[0].name, "fake-e2e");
    LogQuery still;
    still.match = "\"still waiting\"";
    EXPECT_GE(fresh.logCount(runs[0].id, still), 4);
    EXPECT_EQ(fresh.outputOffset(runs[0].id), static_cast<int64_t>(readRawOutput(rawOutputFile(ended.run_dir)).size()));
}

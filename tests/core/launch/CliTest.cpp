// parallax-cli as a person uses it: the real executable, a real mpirun, the fake worker.
#include "core/launch/ProcessTable.h"
#include "core/launch/RawOutput.h"
#include "core/store/RunStore.h"
#include "tests/support/StoreDamage.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

extern char** environ;

namespace fs = std::filesystem;

namespace {

struct Result {
    int code = -1;
    std::string out;
    std::string err;
};

std::string readFile(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

std::string specText(const std::string& name, const std::string& extra = "") {
    return "name = \"" + name + R"("

[model]
kind = "gpt"
preset = "tiny"

[train]
steps = 5
global_batch = 8
micro_batch = 4
warmup = 1

[parallel]
dp = 2

[launch]
target = "local"
)" + extra;
}

class Cli : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/parallax-cli-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        m_dir = tmpl;
        m_store = (m_dir / "parallax.db").string();
        setenv("PARALLAX_WORKER", PARALLAX_FAKE_WORKER, 1);
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(m_dir, ec);
    }

    std::string writeSpec(const std::string& file, const std::string& text) {
        const fs::path p = m_dir / file;
        std::ofstream(p) << text;
        return p.string();
    }

    Result cli(std::vector<std::string> args) {
        args.insert(args.begin(), {PARALLAX_CLI, "--store", m_store});
        const fs::path out = m_dir / "cli.out";
        const fs::path err = m_dir / "cli.err";
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        std::vector<char*> argv;
        for (std::string& a : args)
            argv.push_back(a.data());
        argv.push_back(nullptr);
        pid_t pid = -1;
        Result r;
        const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        if (rc != 0) {
            ADD_FAILURE() << "cannot start " << argv[0];
            return r;
        }
        int status = 0;
        waitpid(pid, &status, 0);
        r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        r.out = readFile(out);
        r.err = readFile(err);
        return r;
    }

    // Where a run of m_store keeps its folder.
    fs::path runDir(int64_t id) const { return fs::path(m_store + ".runs") / std::to_string(id); }

    fs::path m_dir;
    std::string m_store;
};

} // namespace

TEST_F(Cli, HelpDocumentsExitCodes) {
    const Result r = cli({"--help"});
    EXPECT_EQ(r.code, 0);
    EXPECT_TRUE(contains(r.out, "3  the run was stopped on request")) << r.out;
    EXPECT_TRUE(contains(r.out, "PARALLAX_WORKER"));
    EXPECT_EQ(cli({"nonsense-command"}).code, 2);
    EXPECT_EQ(cli({}).code, 2);
}

TEST_F(Cli, CheckPrintsEstimatesAndTheLaunchCommand) {
    const std::string good = writeSpec("good.toml", specText("check-me"));
    Result r = cli({"check", good});
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_TRUE(contains(r.out, "no problems found")) << r.out;
    EXPECT_TRUE(contains(r.out, "parameters")) << r.out;
    EXPECT_TRUE(contains(r.out, "memory/device")) << r.out;
    EXPECT_TRUE(contains(r.out, "optimizer")) << r.out;
    EXPECT_TRUE(contains(r.out, "pipeline bubble")) << r.out;
    EXPECT_TRUE(contains(r.out, "mpirun -np 2 --tag-output")) << r.out;
    EXPECT_TRUE(contains(r.out, "--spec " + good)) << r.out;

    const std::string bad = writeSpec("bad.toml", "name = \"bad\"\n[parallel]\ndp = 0\n");
    r = cli({"check", bad});
    EXPECT_EQ(r.code, 2);
    EXPECT_TRUE(contains(r.out, "parallel.dp")) << r.out;
    EXPECT_FALSE(contains(r.out, "mpirun"));

    r = cli({"check", (m_dir / "missing.toml").string()});
    EXPECT_EQ(r.code, 2);
    EXPECT_TRUE(contains(r.err, "missing.toml")) << r.err;
}

TEST_F(Cli, RunThenInspect) {
    const std::string spec = writeSpec("demo.toml", specText("cli-demo"));
    Result r = cli({"run", spec});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_TRUE(contains(r.out, "run 1 (cli-demo) in " + runDir(1).string())) << r.out;
    EXPECT_TRUE(contains(r.out, "run 1  step 5/5 (100%)  loss 2.0000")) << r.out; // plain progress: not a terminal
    EXPECT_TRUE(contains(r.out, "run 1 succeeded")) << r.out;
    EXPECT_TRUE(contains(r.err, "started mpirun")) << r.err;

    r = cli({"ls"});
    EXPECT_EQ(r.code, 0);
    EXPECT_TRUE(contains(r.out, "ID  NAME")) << r.out;
    EXPECT_TRUE(contains(r.out, "cli-demo  succeeded  gpt    dp2 tp1 pp1 zero0   5/5  2.0000")) << r.out;

    r = cli({"show", "cli-demo"});
    EXPECT_EQ(r.code, 0);
    EXPECT_TRUE(contains(r.out, "state         succeeded")) << r.out;
    EXPECT_TRUE(contains(r.out, "hosts         fakehost-0, fakehost-1")) << r.out;
    EXPECT_TRUE(contains(r.out, "launch        ")) << r.out;
    EXPECT_TRUE(contains(r.out, "--tag-output")) << r.out;
    EXPECT_TRUE(contains(r.out, "step 5        " + (runDir(1) / "checkpoints" / "step-5").string()))
        << r.out;

    r = cli({"metrics", "1", "--csv"});
    EXPECT_EQ(r.code, 0);
    std::istringstream lines(r.out);
    std::string header;
    std::getline(lines, header);
    EXPECT_EQ(header, "step,loss,lr,grad_norm,tokens_per_s,samples_per_s,step_ms,step_ms_min,step_ms_max,"
                      "slowest_rank,mfu,tokens,peak_mem,t");
    std::vector<std::string> rows;
    for (std::string line; std::getline(lines, line);)
        rows.push_back(line);
    ASSERT_EQ(rows.size(), 5u);
    EXPECT_EQ(rows[2].rfind("2,3.3333333333333335,0.001,0,3000,0,0,0,0,0,0,1536,0,", 0), 0u) << rows[2];

    r = cli({"metrics", "1"});
    EXPECT_EQ(r.code, 0);
    EXPECT_TRUE(contains(r.out, "STEP     LOSS")) << r.out;

    r = cli({"logs", "1", "--rank", "1", "--level", "warn"});
    EXPECT_EQ(r.code, 0);
    EXPECT_TRUE(contains(r.out, "r1   W malformed telemetry: ")) << r.out;
    EXPECT_TRUE(contains(r.out, "r1   E Traceback")) << r.out;
    EXPECT_FALSE(contains(r.out, "starting")) << r.out;
    EXPECT_FALSE(contains(r.out, " r0 ")) << r.out;

    r = cli({"logs", "cli-demo", "--grep", "Traceback"});
    EXPECT_EQ(r.code, 0);
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;

    r = cli({"logs", "1", "--tail", "1"});
    EXPECT_EQ(r.code, 0);
    EXPECT_TRUE(contains(r.out, "sup  I run succeeded")) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;

    r = cli({"logs", "1", "--level", "loud"});
    EXPECT_EQ(r.code, 2);

    r = cli({"stop", "1"});
    EXPECT_EQ(r.code, 0);
    EXPECT_TRUE(contains(r.out, "already ended (succeeded)")) << r.out;

    r = cli({"resume", "1"});
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    r = cli({"show", "2"});
    EXPECT_TRUE(contains(r.out, "resumed from  run 1")) << r.out;
    EXPECT_TRUE(contains(r.out, "--resume " + (runDir(1) / "checkpoints").string())) << r.out;
}

TEST_F(Cli, FailedRunExitsOneAndShowsTheRank) {
    const std::string spec = writeSpec("kill.toml", specText("cli-kill", "env = { PARALLAX_FAKE_MODE = \"kill\" }\n"));
    Result r = cli({"run", spec});
    EXPECT_EQ(r.code, 1) << r.out << r.err;
    EXPECT_TRUE(contains(r.out, "run 1 failed: rank 1")) << r.out;
    EXPECT_TRUE(contains(r.err, "parallax-cli logs 1 --level warn")) << r.err;
    r = cli({"show", "1"});
    EXPECT_TRUE(contains(r.out, "failed rank   rank 1 on ")) << r.out;
    EXPECT_TRUE(contains(r.out, "signal 9 (SIGKILL)")) << r.out;
}

TEST_F(Cli, DetachedRunStopsOnRequest) {
    const std::string spec = writeSpec("stop.toml", specText("cli-stop", "env = { PARALLAX_FAKE_MODE = \"stop\" }\n"));
    Result r = cli({"run", spec, "--detach"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, "1\n");
    EXPECT_TRUE(contains(r.err, "parallax-cli logs 1 --follow")) << r.err;
    // Wait until both ranks wait for the stop signal.
    for (int i = 0; i < 300; ++i) {
        r = cli({"logs", "1", "--grep", "waiting for SIGUSR1"});
        if (std::count(r.out.begin(), r.out.end(), '\n') >= 2)
            break;
        usleep(100 * 1000);
    }
    ASSERT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out;
    r = cli({"show", "1"});
    EXPECT_TRUE(contains(r.out, "state         running")) << r.out;

    r = cli({"stop", "1", "--wait"});
    EXPECT_EQ(r.code, 3) << r.out << r.err;
    EXPECT_TRUE(contains(r.out, "sent SIGTERM to supervisor pid")) << r.out;
    EXPECT_TRUE(contains(r.out, "run 1 stopped: checkpointed at step 5")) << r.out;

    r = cli({"logs", "1", "--follow", "--rank", "-1"});
    EXPECT_EQ(r.code, 3);
    EXPECT_TRUE(contains(r.out, "stop requested (SIGTERM)")) << r.out;
    EXPECT_TRUE(contains(readFile(runDir(1) / "supervisor.log"), "run 1 stopped"));
}

TEST_F(Cli, ErrorsNameTheThingAndTheFix) {
    Result r = cli({"show", "nope"});
    EXPECT_EQ(r.code, 4);
    EXPECT_EQ(r.err, "parallax-cli: no run named 'nope' in " + m_store + "; see parallax-cli ls\n");
    r = cli({"logs", "42"});
    EXPECT_EQ(r.code, 4);
    EXPECT_TRUE(contains(r.err, "no run with id 42")) << r.err;

    const std::string bad = writeSpec("bad.toml", "name = \"bad\"\n[parallel]\ndp = 0\n");
    r = cli({"run", bad});
    EXPECT_EQ(r.code, 2);
    EXPECT_TRUE(contains(r.err, "the spec has errors; nothing was started")) << r.err;
    r = cli({"run", bad, "--detach"});
    EXPECT_EQ(r.code, 2);
    r = cli({"ls"});
    EXPECT_TRUE(contains(r.err, "no runs in")) << r.err;

    setenv("PARALLAX_WORKER", "/nonexistent/parallax-worker", 1);
    r = cli({"run", writeSpec("good.toml", specText("x"))});
    EXPECT_EQ(r.code, 4);
    EXPECT_TRUE(contains(r.err, "PARALLAX_WORKER=/nonexistent/parallax-worker")) << r.err;
}

namespace {

// Waits until `done` holds (polling every 100 ms); false after `seconds`.
template <class F>
bool eventually(F done, int seconds = 60) {
    for (int i = 0; i < seconds * 10; ++i) {
        if (done())
            return true;
        usleep(100 * 1000);
    }
    return done();
}

void removeStoreFiles(const std::string& store) {
    for (const char* suffix : {"", "-wal", "-shm", ".logindex", ".logindex-wal", ".logindex-shm"})
        fs::remove(store + suffix);
}

} // namespace

// Run ids count from 1 in every store: stores side by side, or one deleted and made again, must
// never write into each other's run folders.
TEST_F(Cli, StoresInOneFolderKeepTheirRunFoldersApart) {
    const std::string storeA = (m_dir / "a.db").string();
    const std::string storeB = (m_dir / "b.db").string();
    m_store = storeA;
    Result r = cli({"run", writeSpec("a.toml", specText("run-of-a"))});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const fs::path folderA = m_dir / "a.db.runs" / "1";
    EXPECT_TRUE(contains(r.out, "run 1 (run-of-a) in " + folderA.string())) << r.out;
    const std::string outputA = parallax::readRawOutput(parallax::rawOutputFile(folderA.string()));
    const std::string specA = readFile(folderA / "spec.toml");
    ASSERT_FALSE(outputA.empty());

    m_store = storeB;
    r = cli({"run", writeSpec("b.toml", specText("run-of-b"))});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const fs::path folderB = m_dir / "b.db.runs" / "1";
    EXPECT_TRUE(contains(r.out, "run 1 (run-of-b) in " + folderB.string())) << r.out;
    EXPECT_EQ(parallax::readRawOutput(parallax::rawOutputFile(folderA.string())), outputA);
    EXPECT_EQ(readFile(folderA / "spec.toml"), specA);
    // Each store resumes from its own run's checkpoints.
    r = cli({"resume", "1"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    r = cli({"show", "2"});
    EXPECT_TRUE(contains(r.out, "--resume " + (folderB / "checkpoints").string())) << r.out;

    // Store A deleted and made again: its new run 1 gets a folder of its own.
    removeStoreFiles(storeA);
    m_store = storeA;
    r = cli({"run", writeSpec("a2.toml", specText("again-a"))});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const fs::path folderA2 = m_dir / "a.db.runs" / "1-2";
    EXPECT_TRUE(contains(r.out, "run 1 (again-a) in " + folderA2.string())) << r.out;
    EXPECT_EQ(parallax::readRawOutput(parallax::rawOutputFile(folderA.string())), outputA);
    r = cli({"logs", "1", "--rank", "-1"});
    EXPECT_TRUE(contains(r.out, "exists already and belongs to another store")) << r.out;

    // Run folders and what is in them are this user's only.
    EXPECT_EQ(fs::status(folderA2).permissions() & fs::perms::all, fs::perms::owner_all);
    EXPECT_EQ(fs::status(folderA2 / parallax::kCompressedOutputName).permissions() & fs::perms::all,
              fs::perms::owner_read | fs::perms::owner_write);
    EXPECT_EQ(fs::status(storeA).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
}

// A run whose folder another store wrote over (possible with the earlier layout) is never resumed
// from checkpoints that are not its own.
TEST_F(Cli, ResumeRefusesAFolderThatBelongsToAnotherRun) {
    m_store = (m_dir / "a.db").string();
    ASSERT_EQ(cli({"run", writeSpec("a.toml", specText("run-of-a"))}).code, 0);
    m_store = (m_dir / "b.db").string();
    ASSERT_EQ(cli({"run", writeSpec("b.toml", specText("run-of-b"))}).code, 0);
    {
        parallax::RunStore b(m_store);
        b.setRunDir(1, (m_dir / "a.db.runs" / "1").string());
    }
    const Result r = cli({"resume", "1"});
    EXPECT_EQ(r.code, 4) << r.out << r.err;
    EXPECT_TRUE(contains(r.err, "belongs to run 1 of the store " + (m_dir / "a.db").string())) << r.err;
    EXPECT_EQ(cli({"show", "2"}).code, 4); // nothing was started
}

// Folders of the layout before stores had their own (<store folder>/runs/<id>) move to the store's
// folder when they are provably its runs' (same spec); one another store overwrote stays put.
TEST_F(Cli, FoldersOfTheEarlierLayoutMoveWhenTheyAreTheStoresOwn) {
    const std::string specOne = specText("old-one");
    const std::string specTwo = specText("old-two");
    {
        parallax::RunStore store(m_store);
        for (const std::string* spec : {&specOne, &specTwo}) {
            parallax::NewRun nr;
            nr.name = spec == &specOne ? "old-one" : "old-two";
            nr.spec_toml = *spec;
            const int64_t id = store.createRun(nr);
            const fs::path dir = m_dir / "runs" / std::to_string(id);
            fs::create_directories(dir / "checkpoints" / "step-5");
            store.setRunDir(id, dir.string());
            parallax::CheckpointEvent ck;
            ck.step = 5;
            ck.path = (dir / "checkpoints" / "step-5").string();
            store.insertCheckpoint(id, ck);
            store.finishRun(id, parallax::RunState::Succeeded, 0, "");
        }
        std::ofstream(m_dir / "runs" / "1" / "spec.toml") << specOne;
        std::ofstream(m_dir / "runs" / "2" / "spec.toml") << specText("another-stores-run");
    }
    const Result r = cli({"run", writeSpec("new.toml", specText("new"))});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_TRUE(contains(r.err, "run 1: moved " + (m_dir / "runs" / "1").string())) << r.err;
    EXPECT_TRUE(contains(r.err, "run 2: left in place")) << r.err;
    parallax::RunStore store(m_store);
    EXPECT_EQ(store.run(1)->run_dir, runDir(1).string());
    EXPECT_EQ(readFile(runDir(1) / "spec.toml"), specOne);
    EXPECT_EQ(store.checkpoints(1).at(0).path, (runDir(1) / "checkpoints" / "step-5").string());
    EXPECT_EQ(store.run(2)->run_dir, (m_dir / "runs" / "2").string());
    EXPECT_EQ(store.run(3)->run_dir, runDir(3).string());
    const Result resume = cli({"resume", "2"});
    EXPECT_EQ(resume.code, 4);
    EXPECT_TRUE(contains(resume.err, "its spec.toml differs from run 2's spec")) << resume.err;
}

// The store is locked by someone else when the run ends, and the supervisor waiting for it is
// killed: its rows are only in output.log. `import` (and the next supervisor) bring them in and
// record how the run ended, and importing again adds nothing.
TEST_F(Cli, RowsOfASupervisorKilledWhileTheStoreWasLockedAreImported) {
    const std::string spec = writeSpec("stop.toml", specText("locked", "env = { PARALLAX_FAKE_MODE = \"stop\" }\n"));
    Result r = cli({"run", spec, "--detach"});
    ASSERT_EQ(r.code, 0) << r.err;
    ASSERT_TRUE(eventually([&] {
        const Result l = cli({"logs", "1", "--grep", "waiting for SIGUSR1"});
        return std::count(l.out.begin(), l.out.end(), '\n') >= 2;
    }));
    parallax::RunStore locker(m_store);
    const parallax::RunRecord running = *locker.run(1);
    const size_t logsBefore = locker.logs(1).size();
    locker.beginTransaction();
    ASSERT_EQ(kill(static_cast<pid_t>(running.supervisor_pid), SIGTERM), 0); // stop: the ranks checkpoint and end
    // The ranks end; the supervisor cannot write their last rows and waits for the store.
    ASSERT_TRUE(eventually([&] { return contains(readFile(runDir(1) / "supervisor.log"), "does not take its rows"); }));
    ASSERT_EQ(kill(static_cast<pid_t>(running.supervisor_pid), SIGKILL), 0);
    ASSERT_TRUE(eventually([&] { return !parallax::processIsRunning(static_cast<pid_t>(running.supervisor_pid)); }));
    locker.rollback();
    EXPECT_EQ(locker.run(1)->state, parallax::RunState::Running);
    EXPECT_TRUE(locker.checkpoints(1).empty());

    r = cli({"import", "1"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_TRUE(contains(r.out, "run 1: imported ")) << r.out;
    EXPECT_TRUE(contains(r.out, "its output shows it stopped at step 5")) << r.out;
    const parallax::RunRecord after = *locker.run(1);
    EXPECT_EQ(after.state, parallax::RunState::Stopped);
    EXPECT_TRUE(contains(after.exit_reason, "recorded from output.log")) << after.exit_reason;
    ASSERT_EQ(locker.checkpoints(1).size(), 1u);
    EXPECT_EQ(locker.checkpoints(1)[0].step, 5);
    const size_t logsAfter = locker.logs(1).size();
    EXPECT_GT(logsAfter, logsBefore);
    r = cli({"logs", "1"});
    EXPECT_TRUE(contains(r.out, "run ended: stopped at step 5")) << r.out;

    r = cli({"import", "1"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_TRUE(contains(r.out, "imported 0 row(s)")) << r.out;
    EXPECT_EQ(locker.logs(1).size(), logsAfter);
}

// The same, brought in by the next run's supervisor.
TEST_F(Cli, TheNextSupervisorImportsALostRunsRows) {
    const std::string spec = writeSpec("stop.toml", specText("locked", "env = { PARALLAX_FAKE_MODE = \"stop\" }\n"));
    ASSERT_EQ(cli({"run", spec, "--detach"}).code, 0);
    ASSERT_TRUE(eventually([&] {
        const Result l = cli({"logs", "1", "--grep", "waiting for SIGUSR1"});
        return std::count(l.out.begin(), l.out.end(), '\n') >= 2;
    }));
    parallax::RunStore locker(m_store);
    const int64_t pid = locker.run(1)->supervisor_pid;
    locker.beginTransaction();
    ASSERT_EQ(kill(static_cast<pid_t>(pid), SIGTERM), 0);
    ASSERT_TRUE(eventually([&] { return contains(readFile(runDir(1) / "supervisor.log"), "does not take its rows"); }));
    ASSERT_EQ(kill(static_cast<pid_t>(pid), SIGKILL), 0);
    ASSERT_TRUE(eventually([&] { return !parallax::processIsRunning(static_cast<pid_t>(pid)); }));
    locker.rollback();

    const Result r = cli({"run", writeSpec("next.toml", specText("next"))});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_TRUE(contains(r.err, "run 1: imported ")) << r.err;
    EXPECT_EQ(locker.run(1)->state, parallax::RunState::Stopped);
    EXPECT_EQ(locker.checkpoints(1).size(), 1u);
}

// A store whose pages hold garbage opens (its header and schema are intact), but no run starts on
// it: `run` fails in seconds, naming the store and the way back.
TEST_F(Cli, ARunOnAStoreWithGarbagePagesFailsInSecondsNamingItAndStartsNothing) {
    const std::string spec = writeSpec("damaged.toml", specText("damaged-store"));
    ASSERT_EQ(cli({"run", spec}).code, 0);
    ASSERT_GE(parallax::test::garbleStorePages(m_store), 8192);
    const auto start = std::chrono::steady_clock::now();
    const Result r = cli({"run", spec});
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
    EXPECT_EQ(r.code, 4) << r.out << r.err;
    EXPECT_TRUE(contains(r.err, m_store + " is damaged")) << r.err;
    EXPECT_TRUE(contains(r.err, "import " + m_store + ".runs")) << r.err;
    EXPECT_FALSE(fs::exists(runDir(2))) << "a run was started on the damaged store";
}

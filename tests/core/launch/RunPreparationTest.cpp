// A run prepared before it exists, without mpirun: the spec read and validated once and kept as
// written, a resume checked against its parent, the launch drafted once and bound to the run's
// folder, and the run's row and folder made from it.
#include "core/launch/RunCreation.h"
#include "core/launch/RunPreparation.h"
#include "core/launch/SpecRejected.h"
#include "core/spec/SpecIO.h"

#include "tests/support/Process.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace parallax;
namespace fs = std::filesystem;

namespace {

const char* kSpec = R"(# The comments stay: the run keeps the text as written.
name = "prepared"

[parallel]
dp = 2

[model]
kind = "gpt"
preset = "tiny"

[train]
steps = 6
warmup = 2
global_batch = 4
micro_batch = 2
)";

std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

class Preparation : public ::testing::Test {
protected:
    Preparation() : store(dir.path() + "/parallax.db"), folders(store) {
        specPath = dir.path() + "/run.toml";
        std::ofstream(specPath) << kSpec;
        launch.worker = "/opt/parallax-worker";
        launch.cores = 4;
        launch.loopback_library = "/opt/libparallax-loopback.so";
    }
    RunPreparation preparation() { return RunPreparation(store, folders, "host1", launch); }
    // An ended run of kSpec with a checkpoint folder, as a resume finds it.
    int64_t endedRunWithCheckpoints() {
        PreparedRun p = preparation().newRun(checkSpecFile(specPath));
        const int64_t id = createRunRecord(store, p, {});
        const RunFolder folder = createRunFolder(folders, id, p.spec.text, false);
        std::fclose(folder.output_log);
        fs::create_directories(folder.dir + "/checkpoints");
        store.finishRun(id, RunState::Stopped, 0, "", 1.0);
        return id;
    }

    parallax::testing::TempDir dir;
    RunStore store;
    RunFolders folders;
    std::string specPath;
    LaunchContext launch;
};

} // namespace

TEST_F(Preparation, ASpecFileIsKeptAsWrittenAndItsWarningsWithIt) {
    std::ofstream(specPath, std::ios::app) << "\n[train.extra]\nmystery = 1\n";
    const CheckedSpec c = checkSpecFile(specPath);
    EXPECT_EQ(c.text.rfind(kSpec, 0), 0u) << "byte for byte, comments and all";
    EXPECT_EQ(c.spec.name, "prepared");
    EXPECT_EQ(c.spec.parallel.dp, 2);
    std::string warned;
    for (const SpecIssue& w : c.warnings) warned += w.field + ": " + w.message + "\n";
    EXPECT_NE(warned.find("train.extra: unknown key"), std::string::npos) << warned;
}

TEST_F(Preparation, WhatIsNoSpecIsRefusedInTheReadersWords) {
    EXPECT_THROW(checkSpecFile(dir.path()), SpecError); // a folder
    EXPECT_THROW(checkSpecFile(dir.path() + "/missing.toml"), SpecError);
    std::ofstream(dir.path() + "/comments.toml") << "# only a comment\n\n   # and another\n";
    try {
        checkSpecFile(dir.path() + "/comments.toml");
        ADD_FAILURE() << "a file that sets nothing was taken for a run of the defaults";
    } catch (const SpecError& e) {
        EXPECT_NE(std::string(e.what()).find("sets nothing"), std::string::npos) << e.what();
    }
    std::ofstream(dir.path() + "/bad.toml") << "name = \"x\"\n[parallel]\ndp = 0\n";
    EXPECT_THROW(checkSpecFile(dir.path() + "/bad.toml"), SpecRejected);
}

TEST_F(Preparation, TheLaunchIsDraftedOnceAndBoundToTheRunsFolder) {
    const PreparedRun p = preparation().newRun(checkSpecFile(specPath));
    EXPECT_FALSE(p.parent_run);
    const LaunchPlan plan = p.draft.forRun("/runs/3/spec.toml", "/runs/3", "");
    LaunchContext context = launch;
    context.spec_path = "/runs/3/spec.toml";
    context.run_dir = "/runs/3";
    EXPECT_EQ(plan.argv, makeLaunchPlan(p.spec.spec, context).argv);
    EXPECT_EQ(plan.argv.front(), "mpirun");
    EXPECT_EQ(std::vector<std::string>(plan.argv.end() - 5, plan.argv.end()),
              (std::vector<std::string>{"/opt/parallax-worker", "--spec", "/runs/3/spec.toml", "--run-dir", "/runs/3"}));
}

TEST_F(Preparation, ALaunchThatCannotBePlannedFailsBeforeARunExists) {
    RunSpec s = checkSpecFile(specPath).spec;
    s.launch.env["BAD NAME"] = "1";
    EXPECT_THROW(preparation().newRun({s, toToml(s), {}}), std::invalid_argument);
    EXPECT_TRUE(store.listRuns().empty());
}

TEST_F(Preparation, TheRunsRowAndFolderHoldTheSpecAsWritten) {
    const PreparedRun p = preparation().newRun(checkSpecFile(specPath));
    const int64_t id = createRunRecord(store, p, {"nightly"});
    const std::optional<RunRecord> r = store.run(id);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->name, "prepared");
    EXPECT_EQ(r->spec_toml, kSpec);
    EXPECT_EQ(r->state, RunState::Queued);
    EXPECT_EQ(r->world_size, 2);
    EXPECT_EQ(r->tags, std::vector<std::string>{"nightly"});
    const RunFolder folder = createRunFolder(folders, id, p.spec.text, false);
    ASSERT_NE(folder.output_log, nullptr);
    std::fclose(folder.output_log);
    EXPECT_EQ(readFile(folder.dir + "/spec.toml"), kSpec);
    for (const char* file : {"/spec.toml", "/output.log.gz"}) {
        struct stat st {};
        ASSERT_EQ(::stat((folder.dir + file).c_str(), &st), 0);
        EXPECT_EQ(st.st_mode & 0777, 0600u) << file;
    }
    EXPECT_EQ(store.run(id)->run_dir, folder.dir);
}

TEST_F(Preparation, AResumeContinuesItsParentsCheckpointsAndSaysWhatItChanges) {
    const int64_t parent = endedRunWithCheckpoints();
    const PreparedRun same = preparation().resume(parent, "", {});
    EXPECT_EQ(same.parent_run, parent);
    EXPECT_EQ(same.resume_dir, store.run(parent)->run_dir + "/checkpoints");
    EXPECT_EQ(same.spec.text, kSpec);
    EXPECT_NE(same.draft.forRun("s", "d", same.resume_dir).commandLine().find("--resume " + same.resume_dir),
              std::string::npos);

    const PreparedRun changed = preparation().resume(parent, "", {"train.steps=9"});
    EXPECT_EQ(changed.spec.spec.train.steps, 9);
    EXPECT_EQ(parseSpec(changed.spec.text).train.steps, 9);
    // Another model cannot continue these checkpoints.
    EXPECT_THROW(preparation().resume(parent, "", {"model.preset=small"}), SpecRejected);
}

TEST_F(Preparation, NothingIsResumedWithoutCheckpointsOrWhileItRuns) {
    const int64_t parent = endedRunWithCheckpoints();
    fs::remove_all(store.run(parent)->run_dir + "/checkpoints");
    try {
        preparation().resume(parent, "", {});
        ADD_FAILURE() << "a run without checkpoints was resumed";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("has no checkpoints to resume from"), std::string::npos) << e.what();
    }
    NewRun running;
    running.name = "running";
    const int64_t id = store.createRun(running);
    store.markRunning(id, static_cast<int64_t>(getpid()), "host1"); // this very process: alive
    try {
        preparation().resume(id, "", {});
        ADD_FAILURE() << "a running run was resumed";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("stop it first: parallax-cli stop " + std::to_string(id)),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW(preparation().resume(999, "", {}), std::runtime_error);
}

TEST_F(Preparation, OnlyABatchJobsRunIsAttachedTo) {
    const int64_t id = endedRunWithCheckpoints();
    try {
        preparation().attach(id);
        ADD_FAILURE() << "a run without a batch job was attached to";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("is not in a Slurm batch job"), std::string::npos) << e.what();
    }
    NewRun nr;
    nr.name = "batch";
    nr.spec_toml = kSpec;
    const int64_t batch = store.createRun(nr);
    SlurmJob job;
    job.job_id = "12";
    job.mode = SlurmMode::Batch;
    job.state = "RUNNING";
    store.setSlurmJob(batch, job);
    const AttachedRun a = preparation().attach(batch);
    EXPECT_EQ(a.run.id, batch);
    EXPECT_EQ(a.job.job_id, "12");
    EXPECT_EQ(a.spec.name, "prepared");
}

TEST_F(Preparation, RunsOfThisHostWhoseSupervisorDiedAreRecordedLostFirst) {
    NewRun nr;
    nr.name = "orphan";
    const int64_t orphan = store.createRun(nr);
    // A pid that is not running: a child that has exited and been reaped.
    const pid_t gone = ::fork();
    if (gone == 0)
        ::_exit(0);
    ASSERT_GT(gone, 0);
    int status = 0;
    ::waitpid(gone, &status, 0);
    store.markRunning(orphan, gone, "host1");
    int cleanups = 0;
    recoverLostRuns(store, folders, "host1", [&] { ++cleanups; });
    EXPECT_EQ(store.run(orphan)->state, RunState::Lost);
    EXPECT_EQ(cleanups, 0) << "no host waits for a cleanup";
}

// End to end through the product's own path: parallax-cli supervises mpirun and the workers and
// everything lands in the store.

#include "core/store/RunStore.h"
#include "core/launch/RawOutput.h"
#include "tests/support/Process.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

using namespace parallax;
using namespace parallax::testing;
namespace fs = std::filesystem;

namespace {

std::string cli() {
    return buildDir() + "/app/parallax-cli";
}

// The rank of an Open MPI process, from its environment.
int mpiRankOf(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
    std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string key = std::string("OMPI_COMM_WORLD_RANK=");
    const auto at = env.find(key);
    return at == std::string::npos ? -1 : std::atoi(env.c_str() + at + key.size());
}

// Waits until `done` holds, polling; false on timeout.
template <class F>
bool waitFor(F done, std::chrono::seconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
        if (done()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return done();
}

// The id of run `name` once it has stored `steps` steps (training is under way); 0 on timeout.
int64_t waitForSteps(const std::string& store, const std::string& name, size_t steps) {
    int64_t runId = 0;
    const bool ok = waitFor(
        [&] {
            try {
                RunStore db(store);
                auto run = db.findRun(name);
                if (!run) return false;
                runId = run->id;
                return db.metrics(run->id).size() >= steps;
            } catch (const StoreError&) {
                return false; // the supervisor has not created the store yet
            }
        },
        std::chrono::seconds(120));
    return ok ? runId : 0;
}

std::string longGptSpec(const std::string& name) {
    return "name = \"" + name + "\"\n"
           "[model]\nkind = \"gpt\"\npreset = \"tiny\"\n"
           "[data]\nkind = \"synthetic\"\n"
           "[train]\nsteps = 100000\nglobal_batch = 8\nmicro_batch = 4\nlr = 1e-3\nwarmup = 5\ncheckpoint_every = 0\n"
           "[parallel]\ndp = 2\n"
           "[telemetry]\ndevice_sample_ms = 200\n";
}

TEST(CliRun, QuickstartFinishesAndEverythingIsInTheStore) {
    TempDir tmp;
    const std::string store = tmp.path() + "/parallax.db";
    const ProcessResult r = runProcess({cli(), "--store", store, "run", sourceDir() + "/resources/runs/quickstart.toml"});
    ASSERT_EQ(r.exitCode, 0) << r.output;

    RunStore db(store);
    auto run = db.findRun("quickstart");
    ASSERT_TRUE(run.has_value());
    EXPECT_EQ(run->state, RunState::Succeeded);
    EXPECT_EQ(run->world_size, 2);
    EXPECT_EQ(run->exit_code.value_or(-1), 0);
    const auto metrics = db.metrics(run->id);
    ASSERT_EQ(metrics.size(), 1000u);
    for (size_t i = 0; i < metrics.size(); ++i) EXPECT_EQ(metrics[i].step, static_cast<int64_t>(i));
    EXPECT_GT(metrics.back().tokens_per_s, 0);

    std::set<int> sampledRanks;
    for (const DeviceEvent& d : db.deviceSamples(run->id)) {
        sampledRanks.insert(d.rank);
        EXPECT_GT(d.rss, 0);
    }
    EXPECT_EQ(sampledRanks, (std::set<int>{0, 1}));

    LogQuery q;
    q.ranks = {1};
    EXPECT_GT(db.logCount(run->id, q), 0) << "rank 1's own lines are stored";
    EXPECT_EQ(db.checkpoints(run->id).size(), 2u); // step 500 and the end
    EXPECT_TRUE(fs::exists(run->run_dir + "/" + kCompressedOutputName));
    EXPECT_FALSE(fs::exists(run->run_dir + "/output.log")) << "the plain one is replaced, not kept beside it";

    // The losses follow the checked-in golden run (same seed, same data, same layout).
    std::ifstream golden(sourceDir() + "/tests/e2e/golden/quickstart_losses.csv");
    ASSERT_TRUE(golden) << "golden file missing";
    std::string line;
    std::getline(golden, line); // header
    size_t compared = 0;
    while (std::getline(golden, line)) {
        std::istringstream fields(line);
        std::string stepText, lossText;
        std::getline(fields, stepText, ',');
        std::getline(fields, lossText, ',');
        const size_t step = std::stoul(stepText);
        ASSERT_LT(step, metrics.size());
        const double expected = std::stod(lossText);
        // CPU kernels differ slightly between instruction sets, and a thousand steps let that grow;
        // a changed model, data order or optimizer moves the first hundred losses by far more.
        const double tolerance = step < 100 ? 2e-3 : 3e-2;
        EXPECT_NEAR(metrics[step].loss, expected, tolerance * std::fabs(expected)) << "step " << step;
        ++compared;
    }
    EXPECT_EQ(compared, 41u); // every 25th step and the last

    // The CLI reads it back.
    const ProcessResult csv = runProcess({cli(), "--store", store, "metrics", "quickstart", "--csv"});
    ASSERT_EQ(csv.exitCode, 0);
    EXPECT_EQ(csv.output.substr(0, csv.output.find('\n')),
              "step,loss,lr,grad_norm,tokens_per_s,samples_per_s,step_ms,step_ms_min,step_ms_max,slowest_rank,mfu,"
              "tokens,peak_mem,t");
    EXPECT_EQ(std::count(csv.output.begin(), csv.output.end(), '\n'), 1001);
    // Four clothes beside their reconstructions before the first step, at 250, 500, 750 and the end.
    const ProcessResult samples = runProcess({cli(), "--store", store, "samples", "quickstart"});
    ASSERT_EQ(samples.exitCode, 0) << samples.output;
    size_t drawn = 0;
    for (size_t at = samples.output.find("64 x 32"); at != std::string::npos; at = samples.output.find("64 x 32", at + 1))
        ++drawn;
    EXPECT_EQ(drawn, 20u) << samples.output;
    const ProcessResult ls = runProcess({cli(), "--store", store, "ls"});
    EXPECT_NE(ls.output.find("quickstart"), std::string::npos);
    EXPECT_NE(ls.output.find("succeeded"), std::string::npos);
}

TEST(CliRun, KilledRankFailsTheRunNamesTheRankAndLeavesNothingBehind) {
    TempDir tmp;
    const std::string store = tmp.path() + "/parallax.db";
    const std::string spec = tmp.path() + "/long.toml";
    std::ofstream(spec) << longGptSpec("victim");
    BackgroundProcess sup = startProcess({cli(), "--store", store, "run", spec}, tmp.path() + "/cli.out");

    const int64_t runId = waitForSteps(store, "victim", 3);
    ASSERT_GT(runId, 0) << sup.output();
    const std::string runDir = store + ".runs/" + std::to_string(runId);
    pid_t victim = 0;
    for (pid_t pid : processesMatching(runDir))
        if (mpiRankOf(pid) == 1) victim = pid;
    ASSERT_NE(victim, 0) << "rank 1 not found";
    ASSERT_EQ(kill(victim, SIGKILL), 0);

    const int code = sup.wait();
    EXPECT_NE(code, 0) << sup.output();

    RunStore db(store);
    auto run = db.run(runId);
    ASSERT_TRUE(run.has_value());
    EXPECT_EQ(run->state, RunState::Failed);
    EXPECT_NE(run->exit_reason.find("rank 1"), std::string::npos) << run->exit_reason;
    EXPECT_NE(run->exit_reason.find("signal 9"), std::string::npos) << run->exit_reason;
    LogQuery q;
    q.ranks = {1};
    EXPECT_GT(db.logCount(runId, q), 0) << "rank 1's last lines are kept";
    // Nothing of the run is left running: no worker, no mpirun.
    EXPECT_TRUE(waitFor([&] { return processesMatching(runDir).empty(); }, std::chrono::seconds(10)));
    const ProcessResult show = runProcess({cli(), "--store", store, "show", std::to_string(runId)});
    EXPECT_NE(show.output.find("rank 1"), std::string::npos) << show.output;
}

TEST(CliRun, StopCheckpointsAndResumeContinues) {
    TempDir tmp;
    const std::string store = tmp.path() + "/parallax.db";
    const std::string spec = tmp.path() + "/long.toml";
    std::ofstream(spec) << longGptSpec("pausable");
    BackgroundProcess sup = startProcess({cli(), "--store", store, "run", spec}, tmp.path() + "/cli.out");
    const int64_t runId = waitForSteps(store, "pausable", 3);
    ASSERT_GT(runId, 0) << sup.output();

    const ProcessResult stop = runProcess({cli(), "--store", store, "stop", "pausable", "--wait"});
    EXPECT_EQ(stop.exitCode, 3) << "stop --wait ends with the stopped run's exit code: " << stop.output;
    sup.wait();
    RunStore db(store);
    auto run = db.run(runId);
    ASSERT_TRUE(run.has_value());
    EXPECT_EQ(run->state, RunState::Stopped) << run->exit_reason;
    const auto ckpts = db.checkpoints(runId);
    ASSERT_FALSE(ckpts.empty());
    const int64_t stoppedAt = ckpts.back().step;
    EXPECT_GT(stoppedAt, 0);
    EXPECT_TRUE(processesMatching(store + ".runs/" + std::to_string(runId)).empty());

    // Resume in the background and stop again soon after: the new run starts at the checkpoint.
    BackgroundProcess resumed =
        startProcess({cli(), "--store", store, "resume", std::to_string(runId)}, tmp.path() + "/resume.out");
    int64_t childId = 0;
    ASSERT_TRUE(waitFor(
        [&] {
            RunStore s(store);
            for (const RunRecord& r : s.listRuns())
                if (r.parent_run && *r.parent_run == runId && !s.metrics(r.id).empty()) childId = r.id;
            return childId != 0;
        },
        std::chrono::seconds(120)))
        << resumed.output();
    runProcess({cli(), "--store", store, "stop", std::to_string(childId), "--wait"});
    resumed.wait();
    RunStore after(store);
    const auto childMetrics = after.metrics(childId);
    ASSERT_FALSE(childMetrics.empty());
    EXPECT_EQ(childMetrics.front().step, stoppedAt);
}

// Resumed from the same checkpoint as dp=2 and, with --set, as dp=1 (the global batch kept, the
// accumulation doubled): the continued steps have the same losses. Another model is refused.
TEST(CliRun, ResumeOnAnotherLayoutTrainsTheSameNumbers) {
    TempDir tmp;
    const std::string store = tmp.path() + "/parallax.db";
    const std::string spec = tmp.path() + "/long.toml";
    std::ofstream(spec) << longGptSpec("relayout");
    BackgroundProcess sup = startProcess({cli(), "--store", store, "run", spec}, tmp.path() + "/cli.out");
    const int64_t runId = waitForSteps(store, "relayout", 3);
    ASSERT_GT(runId, 0) << sup.output();
    runProcess({cli(), "--store", store, "stop", std::to_string(runId), "--wait"});
    sup.wait();
    const int64_t stoppedAt = RunStore(store).checkpoints(runId).back().step;

    // Each continuation trains a few steps and is stopped; its first losses are compared.
    auto continueWith = [&](const std::vector<std::string>& extra, const std::string& out,
                            const std::string& layout = "dp2", bool fromSpec = false) {
        std::vector<std::string> args = {cli(), "--store", store};
        if (fromSpec) { // run SPEC --from RUN
            args.insert(args.end(), {"run", spec, "--from", std::to_string(runId)});
        } else {
            args.insert(args.end(), {"resume", std::to_string(runId)});
        }
        args.insert(args.end(), extra.begin(), extra.end());
        BackgroundProcess resumed = startProcess(args, tmp.path() + "/" + out);
        int64_t child = 0;
        const bool trained = waitFor(
            [&] {
                RunStore s(store);
                for (const RunRecord& r : s.listRuns())
                    if (r.parent_run && *r.parent_run == runId && r.id > child && s.metrics(r.id).size() >= 4 &&
                        r.layout.find(layout + " ") == 0)
                        child = r.id;
                return child != 0;
            },
            std::chrono::seconds(120));
        if (child) runProcess({cli(), "--store", store, "stop", std::to_string(child), "--wait"});
        resumed.wait();
        std::vector<double> losses;
        if (!trained) return losses;
        for (const StepEvent& e : RunStore(store).metrics(child))
            if (losses.size() < 4) losses.push_back(e.loss);
        EXPECT_EQ(RunStore(store).metrics(child).front().step, stoppedAt);
        return losses;
    };
    const std::vector<double> same = continueWith({}, "same.out");
    const std::vector<double> other = continueWith({"--set", "parallel.dp=1"}, "dp1.out", "dp1 tp1");
    const std::vector<double> tensor =
        continueWith({"--set", "parallel.dp=1", "--set", "parallel.tp=2"}, "tp2.out", "dp1 tp2", true);
    ASSERT_EQ(same.size(), 4u);
    ASSERT_EQ(other.size(), 4u);
    ASSERT_EQ(tensor.size(), 4u);
    for (size_t i = 0; i < 4; ++i) {
        EXPECT_NEAR(same[i], other[i], 1e-5 * std::abs(same[i])) << "step " << i;
        EXPECT_NEAR(same[i], tensor[i], 1e-5 * std::abs(same[i])) << "step " << i << " on dp=1 x tp=2";
    }

    // A checkpoint holds one model.
    const ProcessResult refused =
        runProcess({cli(), "--store", store, "resume", std::to_string(runId), "--set", "model.layers=6"});
    EXPECT_EQ(refused.exitCode, 2) << refused.output;
    EXPECT_NE(refused.output.find("model.layers = 6, but the checkpoint of run " + std::to_string(runId) +
                                  " holds a model with model.layers = "),
              std::string::npos)
        << refused.output;
}

TEST(CliRun, ReportShowsEachRanksDeviceAndThePipelineBubbleAgainstTheory) {
    TempDir tmp;
    const std::string store = tmp.path() + "/parallax.db";
    const std::string spec = tmp.path() + "/pp.toml";
    std::ofstream(spec) << "name = \"piped\"\n"
                           "[model]\nkind = \"gpt\"\npreset = \"tiny\"\n"
                           "[data]\nkind = \"synthetic\"\n"
                           "[train]\nsteps = 10\nglobal_batch = 16\nmicro_batch = 2\nlr = 1e-3\nwarmup = 2\n"
                           "checkpoint_every = 0\n"
                           "[parallel]\npp = 2\nschedule = \"1f1b\"\n"
                           "[telemetry]\ndevice_sample_ms = 100\nspan_every = 2\n";
    const ProcessResult r = runProcess({cli(), "--store", store, "run", spec});
    ASSERT_EQ(r.exitCode, 0) << r.output;

    const ProcessResult report = runProcess({cli(), "--store", store, "report", "piped", "--from-step", "2"});
    ASSERT_EQ(report.exitCode, 0) << report.output;
    EXPECT_NE(report.output.find("steps 2 to 9 (8 step rows; medians)"), std::string::npos) << report.output;
    EXPECT_NE(report.output.find("pipeline bubble (theory 11.1%: p = 2, m = 8, 1f1b)"), std::string::npos)
        << report.output;
    EXPECT_NE(report.output.find("median"), std::string::npos) << report.output;
    // Both ranks sampled their (CPU) device while the counted steps ran; steps 2, 4, 6, 8 had spans.
    for (const char* row : {"\n   0  ", "\n   1  ", "\n     2  ", "\n     8  "})
        EXPECT_NE(report.output.find(row), std::string::npos) << "missing row '" << row << "':\n" << report.output;
    EXPECT_EQ(report.output.find("\n     0  "), std::string::npos) << "step 0 is before --from-step";

    const ProcessResult unknown = runProcess({cli(), "--store", store, "report", "no-such-run"});
    EXPECT_NE(unknown.exitCode, 0);
    EXPECT_NE(unknown.output.find("no-such-run"), std::string::npos) << unknown.output;
}

} // namespace

// A damaged newest checkpoint is skipped when resuming, and the person at the terminal is told,
// not only the run's log.
TEST(CliRun, ResumeSaysOnTheTerminalWhenItSkipsADamagedCheckpoint) {
    TempDir tmp;
    const std::string store = tmp.path() + "/parallax.db";
    const std::string spec = tmp.path() + "/ck.toml";
    std::ofstream(spec) << "name = \"checkpointed\"\n[model]\nkind = \"gpt\"\npreset = \"tiny\"\n"
                           "[data]\nkind = \"synthetic\"\n"
                           "[train]\nsteps = 6\nglobal_batch = 4\nmicro_batch = 2\nlr = 1e-3\nwarmup = 1\n"
                           "checkpoint_every = 2\n[parallel]\ndp = 2\n";
    const ProcessResult first = runProcess({cli(), "--store", store, "run", spec});
    ASSERT_EQ(first.exitCode, 0) << first.output;
    std::string newest;
    {
        RunStore db(store);
        const auto ckpts = db.checkpoints(db.findRun("checkpointed")->id);
        ASSERT_GE(ckpts.size(), 2u);
        newest = ckpts.back().path;
    }
    {
        std::fstream f(newest + "/rank_00000.safetensors", std::ios::in | std::ios::out | std::ios::binary);
        ASSERT_TRUE(f.good()) << newest;
        f.seekp(200);
        f.write("garbage!", 8);
    }
    const ProcessResult resumed = runProcess({cli(), "--store", store, "resume", "checkpointed"});
    EXPECT_EQ(resumed.exitCode, 0) << resumed.output;
    EXPECT_NE(resumed.output.find("rank 0: checkpoint " + newest + " is damaged"), std::string::npos)
        << resumed.output;
    EXPECT_NE(resumed.output.find("trying an earlier checkpoint"), std::string::npos) << resumed.output;
}

// Hangs and stragglers done to real ranks under mpirun, through parallax-cli: a rank stopped with
// SIGSTOP (dp and pp layouts), a hang that on_hang = "fail" ends, a rank slowed by a SIGSTOP/SIGCONT
// duty cycle, and a fault-free stretch that must raise nothing.

#include "tests/e2e/RunProcesses.h"

#include "core/util/Files.h"

#include <gtest/gtest.h>

#include <optional>
#include <csignal>
#include <fstream>
#include <thread>

using namespace parallax;
using namespace parallax::testing;

namespace {

// A dp=2 (or the `parallel` layout) run started detached; its record once it trains.
struct Started {
    TempDir tmp;
    std::string store = tmp.path() + "/parallax.db";
    std::optional<RunRecord> run;

    Started(const std::string& name, const std::string& specText) {
        const std::string path = tmp.path() + "/" + name + ".toml";
        std::ofstream(path) << specText;
        const ProcessResult r = runProcess({cliExecutable(), "--store", store, "run", "--detach", path});
        EXPECT_EQ(r.exitCode, 0) << r.output;
        run = waitForRun(store, name, [](RunStore& db, const RunRecord& rec) { return db.metrics(rec.id).size() >= 5; },
                         std::chrono::seconds(120));
    }
    ~Started() {
        if (!run) return;
        for (pid_t pid : runProcesses(run->run_dir, "parallax-worker")) ::kill(pid, SIGCONT);
        runProcess({cliExecutable(), "--store", store, "stop", std::to_string(run->id), "--wait"});
    }
    std::string show() const { return runProcess({cliExecutable(), "--store", store, "show", std::to_string(run->id)}).output; }
    std::optional<RunAlert> alert(AlertKind kind) const {
        for (const RunAlert& a : RunStore(store).alerts(run->id))
            if (a.kind == kind) return a;
        return std::nullopt;
    }
    int64_t lastStep() const { return RunStore(store).run(run->id)->last_step; }
};

std::string tinyGptWithLayers(const std::string& name, const std::string& parallel, const std::string& telemetry,
                              int globalBatch = 4) {
    return "name = \"" + name + "\"\n[model]\nkind = \"gpt\"\npreset = \"tiny\"\nlayers = 4\n[data]\nkind = \"synthetic\"\n"
           "[train]\nsteps = 100000\nglobal_batch = " + std::to_string(globalBatch) + "\nmicro_batch = " +
           std::to_string(globalBatch / 2) + "\nlr = 1e-3\ncheckpoint_every = 0\n"
           "[parallel]\n" + parallel + "[telemetry]\ndevice_sample_ms = 1000\n" + telemetry;
}

void expectStoppedRankNamed(const std::string& parallel, const std::string& name) {
    Started s(name, tinyGptWithLayers(name, parallel, "hang_after_s = 10\n"));
    ASSERT_TRUE(s.run.has_value()) << "the run did not train";
    const pid_t victim = rankPid(s.run->run_dir, 1);
    ASSERT_GT(victim, 0);
    ASSERT_EQ(::kill(victim, SIGSTOP), 0);
    std::string show;
    const bool named = waitUntil(
        [&] {
            show = s.show();
            return show.find("  hang ") != std::string::npos;
        },
        std::chrono::seconds(60), std::chrono::milliseconds(500));
    ::kill(victim, SIGCONT);
    ASSERT_TRUE(named) << "no hang named within 60 s:\n" << show;
    EXPECT_NE(show.find("rank 1 on " + s.run->supervisor_host + " is silent"), std::string::npos) << show;
    EXPECT_NE(show.find("rank 0 waits in "), std::string::npos) << show;
    // It ends when the rank goes on.
    EXPECT_TRUE(waitUntil([&] { return s.alert(AlertKind::Hang) && !s.alert(AlertKind::Hang)->active; }, std::chrono::seconds(30)));
}

TEST(Hang, AStoppedRankAndTheCollectiveTheOthersWaitInAreNamedWhileTheRunGoes) {
    expectStoppedRankNamed("dp = 2\n", "stopped-dp");
}

TEST(Hang, AStoppedPipelineStageIsNamed) {
    expectStoppedRankNamed("pp = 2\n", "stopped-pp");
}

TEST(Hang, OnHangFailEndsTheRunNamingTheRankAndLeavesNothingRunning) {
    Started s("fails", tinyGptWithLayers("fails", "dp = 2\n", "hang_after_s = 5\non_hang = \"fail\"\nhang_timeout_s = 5\n"));
    ASSERT_TRUE(s.run.has_value());
    const pid_t victim = rankPid(s.run->run_dir, 1);
    ASSERT_GT(victim, 0);
    ASSERT_EQ(::kill(victim, SIGSTOP), 0);
    ASSERT_TRUE(waitUntil([&] { return isTerminal(RunStore(s.store).run(s.run->id)->state); },
                          std::chrono::seconds(90)));
    const RunRecord ended = *RunStore(s.store).run(s.run->id);
    EXPECT_EQ(ended.state, RunState::Failed);
    EXPECT_NE(ended.exit_reason.find("hang: no step for"), std::string::npos) << ended.exit_reason;
    EXPECT_NE(ended.exit_reason.find("rank 1 on " + ended.supervisor_host + " is silent"), std::string::npos)
        << ended.exit_reason;
    EXPECT_NE(ended.exit_reason.find("telemetry.on_hang = \"fail\""), std::string::npos) << ended.exit_reason;
    // The rank that could, wrote its flight recorder; nothing of the run runs any more.
    const std::string ring = readFile(s.run->run_dir + "/flight-rank0.json");
    EXPECT_NE(ring.find("\"operations\""), std::string::npos);
    EXPECT_NE(ring.find("\"all_reduce\""), std::string::npos);
    EXPECT_TRUE(waitUntil([&] { return processesMatching(s.run->run_dir).empty(); }, std::chrono::seconds(20)));
}

TEST(Hang, ARankAtHalfSpeedIsNamedAsTheStragglerAndAFaultFreeStretchRaisesNothing) {
    // Steps of about half a second here (a global batch of 40), as training steps go: ten steps span
    // five seconds, so that a rank held up for a second or two by this shared machine's other work is
    // no straggler (with 300 ms steps a 4 s hold-up of one rank was named once in a fault-free minute).
    // Both ranks on one core: a virtual machine's core can run at half speed for a minute, which
    // would make the rank on it a straggler as real as the one this test makes; on one core both
    // ranks see the same speed, and only the slowing below sets one apart.
    Started s("slowed", tinyGptWithLayers("slowed", "dp = 2\n",
                                          "hang_after_s = 10\n[launch]\nmpirun_args = [\"--cpu-set\", \"0\"]\n", 40));
    ASSERT_TRUE(s.run.has_value());
    // A minute fault-free (about 200 steps; the ranks share this machine's cores): no hang, no
    // straggler.
    std::this_thread::sleep_for(std::chrono::seconds(60));
    EXPECT_FALSE(s.alert(AlertKind::Hang)) << s.alert(AlertKind::Hang)->message;
    EXPECT_FALSE(s.alert(AlertKind::Straggler)) << s.alert(AlertKind::Straggler)->message;

    const pid_t victim = rankPid(s.run->run_dir, 1);
    ASSERT_GT(victim, 0);
    const int64_t before = s.lastStep();
    const auto slowedAt = std::chrono::steady_clock::now();
    const double slowedWall =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::optional<HalfSpeedRank> slowed(std::in_place, s.run->run_dir, 1);
    int64_t namedAt = -1;
    std::chrono::steady_clock::duration namedAfter{};
    waitUntil(
        [&] {
            const std::optional<RunAlert> a = s.alert(AlertKind::Straggler);
            if (a && a->active) {
                namedAt = s.lastStep();
                namedAfter = std::chrono::steady_clock::now() - slowedAt;
            }
            return namedAt >= 0;
        },
        std::chrono::seconds(60), std::chrono::milliseconds(200));
    slowed.reset();
    ASSERT_GE(namedAt, 0) << "no straggler named";
    // The onset: the first step rank 1 began after the slowing began (its end less its compute and
    // wait); the step under way when the slowing began ran at half speed for only part of its time.
    int64_t onset = -1;
    for (const RankStepEvent& e : RunStore(s.store).events<RankStepEvent>(s.run->id, before - 1)) {
        const double began = e.t - (e.compute_ms + e.wait_ms) / 1000.0;
        if (e.rank == 1 && began >= slowedWall && (onset < 0 || e.step < onset)) onset = e.step;
    }
    ASSERT_GE(onset, 0);
    const std::optional<RunAlert> a = s.alert(AlertKind::Straggler);
    ASSERT_TRUE(a.has_value());
    // Found within 10 steps of the onset (the supervisor looks at each step as it arrives), and in the
    // store well within the minute.
    EXPECT_EQ(a->ranks, std::vector<int>{1});
    EXPECT_GE(a->step, onset);
    EXPECT_LE(a->step - onset, 10) << "found at step " << a->step << ", slowed from step " << onset
                                   << " (in the store at step " << namedAt << ")";
    EXPECT_LE(std::chrono::duration_cast<std::chrono::seconds>(namedAfter).count(), 20);
    EXPECT_NE(a->message.find("rank 1 on " + s.run->supervisor_host + ": compute"), std::string::npos) << a->message;
    EXPECT_FALSE(s.alert(AlertKind::Hang) && s.alert(AlertKind::Hang)->active);
    // Said once in the run's log while the same rank stays the straggler (not once a step it is).
    LogQuery said;
    said.match = "\"straggler: rank 1\"";
    EXPECT_EQ(RunStore(s.store).logCount(s.run->id, said), 1);
    // report names it over the slowed steps, with each rank's compute and wait.
    const ProcessResult report = runProcess({cliExecutable(), "--store", s.store, "report", std::to_string(s.run->id),
                                             "--from-step", std::to_string(onset)});
    EXPECT_EQ(report.exitCode, 0) << report.output;
    EXPECT_NE(report.output.find("COMPUTE MS"), std::string::npos) << report.output;
    // Over every step since the onset (the recovered ones too) it is the straggler, or at least the slowest.
    const std::string named = "rank 1 on " + s.run->supervisor_host + ": compute";
    EXPECT_TRUE(report.output.find("straggler: " + named) != std::string::npos ||
                report.output.find("slowest: " + named) != std::string::npos)
        << report.output;
}

} // namespace

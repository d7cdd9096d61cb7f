#include "core/store/RunStore.h"
#include "tests/core/store/RawDb.h"
#include "tests/core/store/ErrorOf.h"
#include "tests/core/store/TempDir.h"

#include <gtest/gtest.h>

#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

namespace parallax {
namespace {

using test::RawDb;
using test::TempDir;

class RunStoreTest : public ::testing::Test {
protected:
    TempDir dir;
    std::string path = dir.file("parallax.db");
    RunStore store{path};

    int64_t newRun(const std::string& name, const std::string& model = "gpt",
                   std::vector<std::string> tags = {}) {
        NewRun r;
        r.name = name;
        r.model_kind = model;
        r.layout = "dp1 tp1 pp1 zero0";
        r.tags = std::move(tags);
        return store.createRun(r);
    }

    std::vector<int64_t> ids(const RunFilter& f) {
        std::vector<int64_t> out;
        for (const auto& r : store.listRuns(f)) out.push_back(r.id);
        return out;
    }
};

TEST_F(RunStoreTest, EveryRunFieldRoundTrips) {
    NewRun parentSpec;
    parentSpec.name = "parent";
    const int64_t parent = store.createRun(parentSpec);

    NewRun n;
    n.name = "mmdit-fashion-dp2";
    n.spec_toml = "name = \"mmdit-fashion-dp2\"\n[model]\nkind = \"mmdit\"\n# üñïçødé\n";
    n.model_kind = "mmdit";
    n.layout = "dp2 tp1 pp1 zero0";
    n.steps_total = 500;
    n.world_size = 2;
    n.parent_run = parent;
    n.tags = {"baseline", "fp32", "with \"quotes\""};
    const double before = std::chrono::duration<double>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
    const int64_t id = store.createRun(n);

    store.setRunDir(id, "/home/me/.local/share/parallax/runs/2");
    store.setLaunchCommand(id, "mpirun -np 2 --tag-output parallax-worker --spec 'a b.toml'");
    store.markRunning(id, 4242, "node1");
    RunStartEvent start;
    start.world = 4;
    start.dp = 2;
    start.tp = 2;
    start.pp = 1;
    start.zero = 1;
    start.schedule = "1f1b";
    start.params = 123456789;
    start.flops_per_token = 7.5e8;
    start.peak_flops = 9.89e14;
    start.device = "cuda";
    start.hosts = {"node1", "node1", "node2", "node2"};
    start.devices = {"NVIDIA H200 #0", "NVIDIA H200 #1", "NVIDIA H200 #0", "NVIDIA H200 #1"};
    start.clock_offsets = {0.0, 1e-6, -2.5e-4, 3e-3};
    start.start_step = 100;
    start.t = 1700000000.25;
    store.setRunStart(id, start);
    StepEvent last;
    last.step = 499;
    last.loss = 0.125;
    last.tokens_per_s = 51234.5;
    last.mfu = 0.41;
    store.updateSummary(id, last);
    store.setTags(id, {"best", "compare me"});
    store.setNotes(id, "lr warmup too short?\nsecond line");
    store.finishRun(id, RunState::Failed, 137, "rank 3 was killed (SIGKILL)");

    const auto r = store.run(id);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->id, id);
    EXPECT_EQ(r->name, n.name);
    EXPECT_EQ(r->spec_toml, n.spec_toml);
    EXPECT_EQ(r->state, RunState::Failed);
    EXPECT_GE(r->created_at, before - 1);
    EXPECT_GE(r->started_at, r->created_at);
    EXPECT_GE(r->ended_at, r->started_at);
    EXPECT_EQ(r->hosts, (std::vector<std::string>{"node1", "node2"}));
    EXPECT_EQ(r->world_size, 4);
    ASSERT_TRUE(r->exit_code);
    EXPECT_EQ(*r->exit_code, 137);
    EXPECT_EQ(r->exit_reason, "rank 3 was killed (SIGKILL)");
    EXPECT_EQ(r->supervisor_pid, 4242);
    EXPECT_EQ(r->supervisor_host, "node1");
    EXPECT_EQ(r->parent_run, parent);
    EXPECT_EQ(r->tags, (std::vector<std::string>{"best", "compare me"}));
    EXPECT_EQ(r->notes, "lr warmup too short?\nsecond line");
    EXPECT_EQ(r->run_dir, "/home/me/.local/share/parallax/runs/2");
    EXPECT_EQ(r->launch_command, "mpirun -np 2 --tag-output parallax-worker --spec 'a b.toml'");
    EXPECT_EQ(r->model_kind, "mmdit");
    EXPECT_EQ(r->layout, "dp2 tp1 pp1 zero0");
    EXPECT_EQ(r->params, 123456789);
    EXPECT_EQ(r->steps_total, 500);
    EXPECT_EQ(r->last_step, 499);
    EXPECT_EQ(r->last_loss, 0.125);
    EXPECT_EQ(r->tokens_per_s, 51234.5);
    EXPECT_EQ(r->mfu, 0.41);

    const auto s = store.runStart(id);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->world, 4);
    EXPECT_EQ(s->dp, 2);
    EXPECT_EQ(s->tp, 2);
    EXPECT_EQ(s->pp, 1);
    EXPECT_EQ(s->zero, 1);
    EXPECT_EQ(s->schedule, "1f1b");
    EXPECT_EQ(s->params, 123456789);
    EXPECT_EQ(s->flops_per_token, 7.5e8);
    EXPECT_EQ(s->peak_flops, 9.89e14);
    EXPECT_EQ(s->device, "cuda");
    EXPECT_EQ(s->hosts, start.hosts);
    EXPECT_EQ(s->devices, start.devices);
    EXPECT_EQ(s->clock_offsets, start.clock_offsets);
    EXPECT_EQ(s->start_step, 100);
    EXPECT_EQ(s->t, 1700000000.25);
    EXPECT_FALSE(store.runStart(parent));
}

// A run keeps its run_start through the event's declared fields: every field has its key, so a
// field the event gains is kept; a key missing or of another type (an older row, a hand edit) reads
// as the field's default.
TEST_F(RunStoreTest, RunStartIsKeptFieldByField) {
    const int64_t id = newRun("start");
    RunStartEvent start;
    start.world = 2;
    start.pids = {int64_t{1} << 40, 7};
    start.slurm_nodes = "n[1-2]";
    store.setRunStart(id, start);
    RawDb raw(path);
    const std::string text = raw.text("SELECT run_start FROM runs WHERE id = " + std::to_string(id));
    for (const EventField<RunStartEvent>& f : RunStartEvent::fields())
        EXPECT_NE(text.find("\"" + std::string(f.name) + "\":"), std::string::npos) << f.name << " in " << text;
    EXPECT_EQ(store.runStart(id)->pids, start.pids);
    EXPECT_EQ(store.runStart(id)->slurm_nodes, "n[1-2]");

    raw.exec("UPDATE runs SET run_start = '{\"world\": \"two\", \"dp\": 2, \"hosts\": [\"a\"]}' WHERE id = " +
             std::to_string(id));
    const std::optional<RunStartEvent> edited = store.runStart(id);
    ASSERT_TRUE(edited);
    EXPECT_EQ(edited->world, RunStartEvent{}.world);
    EXPECT_EQ(edited->dp, 2);
    EXPECT_EQ(edited->hosts, std::vector<std::string>{"a"});
    EXPECT_TRUE(edited->pids.empty());
}

TEST_F(RunStoreTest, NewRunStartsQueuedWithEmptySummary) {
    const int64_t id = newRun("fresh");
    const auto r = store.run(id);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->state, RunState::Queued);
    EXPECT_EQ(r->started_at, 0);
    EXPECT_EQ(r->ended_at, 0);
    EXPECT_EQ(r->last_step, -1);
    EXPECT_FALSE(r->last_loss);
    EXPECT_FALSE(r->tokens_per_s);
    EXPECT_FALSE(r->mfu);
    EXPECT_FALSE(r->exit_code);
    EXPECT_FALSE(r->parent_run);
    EXPECT_TRUE(r->tags.empty());
    EXPECT_FALSE(store.run(id + 1000));
}

TEST_F(RunStoreTest, StateTransitions) {
    const int64_t id = newRun("life");
    store.markRunning(id, 100, "hostA");
    auto r = store.run(id);
    EXPECT_EQ(r->state, RunState::Running);
    const double started = r->started_at;
    EXPECT_GT(started, 0);
    EXPECT_EQ(r->ended_at, 0);

    // Marking running again (a supervisor restarted its bookkeeping) keeps the start time.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    store.markRunning(id, 101, "hostA");
    EXPECT_EQ(store.run(id)->started_at, started);
    EXPECT_EQ(store.run(id)->supervisor_pid, 101);

    EXPECT_NE(errorOf([&] { store.finishRun(id, RunState::Running, 0, ""); }).find("not a final state"),
              std::string::npos);
    store.finishRun(id, RunState::Succeeded, 0, "");
    r = store.run(id);
    EXPECT_EQ(r->state, RunState::Succeeded);
    EXPECT_GT(r->ended_at, 0);
    EXPECT_EQ(r->exit_code, 0);
    const std::string again = errorOf([&] { store.markRunning(id, 5, "hostA"); });
    EXPECT_NE(again.find("already ended (succeeded)"), std::string::npos) << again;

    // A run marked lost whose supervisor turns out to be alive comes back.
    const int64_t lost = newRun("flaky");
    store.markRunning(lost, 7, "hostB");
    store.finishRun(lost, RunState::Lost, std::nullopt, "supervisor gone");
    store.markRunning(lost, 7, "hostB");
    EXPECT_EQ(store.run(lost)->state, RunState::Running);
    EXPECT_EQ(store.run(lost)->ended_at, 0);
    store.finishRun(lost, RunState::Stopped, std::nullopt, "stopped by the user");
    EXPECT_FALSE(store.run(lost)->exit_code);
    EXPECT_EQ(store.run(lost)->exit_reason, "stopped by the user");
}

TEST_F(RunStoreTest, SummaryKeepsNaNLossAndTreatsZeroMfuAsUnknown) {
    const int64_t id = newRun("nan");
    StepEvent s;
    s.step = 7;
    s.loss = std::nan("");
    s.tokens_per_s = 10;
    s.mfu = 0;
    store.updateSummary(id, s);
    const auto r = store.run(id);
    EXPECT_EQ(r->last_step, 7);
    ASSERT_TRUE(r->last_loss);
    EXPECT_TRUE(std::isnan(*r->last_loss));
    EXPECT_FALSE(r->mfu);
    EXPECT_EQ(r->tokens_per_s, 10);
}

TEST_F(RunStoreTest, UpdatesOfAMissingRunFailWithItsId) {
    for (const auto& fn : std::vector<std::function<void()>>{
             [&] { store.setRunDir(999, "x"); },
             [&] { store.setLaunchCommand(999, "x"); },
             [&] { store.markRunning(999, 1, "h"); },
             [&] { store.setRunStart(999, RunStartEvent{}); },
             [&] { store.updateSummary(999, StepEvent{}); },
             [&] { store.finishRun(999, RunState::Failed, 1, ""); },
             [&] { store.setTags(999, {}); },
             [&] { store.setNotes(999, ""); },
             [&] { store.deleteRun(999); },
         }) {
        const std::string what = errorOf(fn);
        EXPECT_NE(what.find("run 999 does not exist"), std::string::npos) << what;
    }
    NewRun orphan;
    orphan.name = "orphan";
    orphan.parent_run = 999;
    EXPECT_NE(errorOf([&] { store.createRun(orphan); }).find("parent run 999"), std::string::npos);
    NewRun unnamed;
    EXPECT_NE(errorOf([&] { store.createRun(unnamed); }).find("name"), std::string::npos);
}

TEST_F(RunStoreTest, TagsAndNotesEdits) {
    const int64_t id = newRun("edit", "gpt", {"a"});
    EXPECT_EQ(store.run(id)->tags, (std::vector<std::string>{"a"}));
    store.setTags(id, {"b", "c"});
    EXPECT_EQ(store.run(id)->tags, (std::vector<std::string>{"b", "c"}));
    store.setTags(id, {});
    EXPECT_TRUE(store.run(id)->tags.empty());
    store.setTags(id, {"bad\xff byte"}); // not UTF-8: kept, with the byte replaced
    EXPECT_EQ(store.run(id)->tags, (std::vector<std::string>{"bad\xef\xbf\xbd byte"}));
    store.setNotes(id, "first");
    store.setNotes(id, "second");
    EXPECT_EQ(store.run(id)->notes, "second");
}

TEST_F(RunStoreTest, FindRunByIdOrLatestName) {
    const int64_t a1 = newRun("alpha");
    const int64_t b = newRun("beta");
    const int64_t a2 = newRun("alpha");
    const int64_t numeric = newRun("12345");
    EXPECT_EQ(store.findRun(std::to_string(b))->id, b);
    EXPECT_EQ(store.findRun(" " + std::to_string(a1) + " ")->id, a1);
    EXPECT_EQ(store.findRun("alpha")->id, a2);
    EXPECT_EQ(store.latestRunNamed("alpha")->id, a2);
    EXPECT_EQ(store.findRun("12345")->id, numeric); // no run 12345: the name
    EXPECT_FALSE(store.findRun("gamma"));
    EXPECT_FALSE(store.findRun(""));
    EXPECT_FALSE(store.latestRunNamed("gamma"));
}

TEST_F(RunStoreTest, ListRunsFiltersByTextAndState) {
    const int64_t gpt = newRun("gpt-small-dp4", "gpt", {"baseline"});
    const int64_t vlm = newRun("qwen-vl", "vlm", {"vision"});
    const int64_t dit = newRun("mmdit-fashion", "mmdit");
    const int64_t percent = newRun("lr 50% lower", "gpt");
    store.setNotes(dit, "diverged after warmup");
    store.markRunning(vlm, 1, "h");
    store.markRunning(dit, 2, "h");
    store.finishRun(dit, RunState::Failed, 1, "loss nan");

    RunFilter f;
    EXPECT_EQ(ids(f), (std::vector<int64_t>{percent, dit, vlm, gpt}));
    f.text = "VL";  // name, case-insensitive
    EXPECT_EQ(ids(f), (std::vector<int64_t>{vlm}));
    f.text = "mmdit"; // model kind and name
    EXPECT_EQ(ids(f), (std::vector<int64_t>{dit}));
    f.text = "baseline"; // tag
    EXPECT_EQ(ids(f), (std::vector<int64_t>{gpt}));
    f.text = "diverged"; // notes
    EXPECT_EQ(ids(f), (std::vector<int64_t>{dit}));
    f.text = "dp1 tp1"; // layout
    EXPECT_EQ(ids(f).size(), 4u);
    f.text = "50%"; // LIKE wildcards are literal
    EXPECT_EQ(ids(f), (std::vector<int64_t>{percent}));
    f.text = "_";
    EXPECT_TRUE(ids(f).empty());
    f.text.clear();
    f.states = {RunState::Running, RunState::Failed};
    EXPECT_EQ(ids(f), (std::vector<int64_t>{dit, vlm}));
    f.states = {RunState::Queued};
    EXPECT_EQ(ids(f), (std::vector<int64_t>{percent, gpt}));
    f.text = "gpt";
    f.limit = 1;
    EXPECT_EQ(ids(f), (std::vector<int64_t>{percent}));
    f.limit = 0;
    EXPECT_TRUE(ids(f).empty());
}

TEST_F(RunStoreTest, ListRunsSortsByEveryOrderKey) {
    // Three runs whose values are ordered differently per column; the third has no summary.
    const int64_t a = newRun("Bravo");
    const int64_t b = newRun("alpha");
    const int64_t c = newRun("charlie");
    StepEvent s;
    s.step = 10;
    s.loss = 2.0;
    s.tokens_per_s = 100;
    s.mfu = 0.2;
    store.updateSummary(a, s);
    s.loss = 1.0;
    s.tokens_per_s = 300;
    s.mfu = 0.1;
    store.updateSummary(b, s);
    store.markRunning(a, 1, "h");
    store.markRunning(b, 2, "h");
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    store.finishRun(b, RunState::Succeeded, 0, ""); // b: ~30 ms; a still running: longer
    std::this_thread::sleep_for(std::chrono::milliseconds(30));

    auto order = [&](const std::string& key, bool desc) {
        RunFilter f;
        f.order_by = key;
        f.descending = desc;
        return ids(f);
    };
    using V = std::vector<int64_t>;
    EXPECT_EQ(order("id", false), (V{a, b, c}));
    EXPECT_EQ(order("id", true), (V{c, b, a}));
    EXPECT_EQ(order("name", false), (V{b, a, c})); // case-insensitive
    EXPECT_EQ(order("name", true), (V{c, a, b}));
    EXPECT_EQ(order("created_at", false), (V{a, b, c}));
    EXPECT_EQ(order("created_at", true), (V{c, b, a}));
    // queued < running < succeeded alphabetically; ties by id in the same direction.
    EXPECT_EQ(order("state", false), (V{c, a, b}));
    EXPECT_EQ(order("state", true), (V{b, a, c}));
    // Runs without a value come last in both directions.
    EXPECT_EQ(order("last_loss", false), (V{b, a, c}));
    EXPECT_EQ(order("last_loss", true), (V{a, b, c}));
    EXPECT_EQ(order("tokens_per_s", false), (V{a, b, c}));
    EXPECT_EQ(order("tokens_per_s", true), (V{b, a, c}));
    EXPECT_EQ(order("mfu", true), (V{a, b, c}));
    EXPECT_EQ(order("duration", false), (V{b, a, c}));
    EXPECT_EQ(order("duration", true), (V{a, b, c}));
    EXPECT_EQ(order("", true), (V{c, b, a}));
    EXPECT_EQ(order("started_at", false), (V{a, b, c})); // c never started
    EXPECT_EQ(order("started_at", true), (V{b, a, c}));
    EXPECT_EQ(order("ended_at", false), (V{b, a, c}));   // only b ended
    EXPECT_EQ(order("ended_at", true), (V{b, c, a}));
    EXPECT_EQ(order("last_step", false), (V{a, b, c}));  // a and b tie; c has no step
    EXPECT_EQ(order("last_step", true), (V{b, a, c}));
    EXPECT_EQ(order("world_size", false), (V{a, b, c})); // all equal: by id
    EXPECT_EQ(order("world_size", true), (V{c, b, a}));

    const std::string what = errorOf([&] { order("name; DROP TABLE runs", false); });
    EXPECT_NE(what.find("cannot sort by"), std::string::npos) << what;
    EXPECT_NE(what.find("duration"), std::string::npos) << what;
    EXPECT_EQ(store.listRuns().size(), 3u);
}

TEST_F(RunStoreTest, MarkLostRunsOnlyTouchesDeadSupervisorsOfThisHost) {
    const int64_t dead = newRun("dead");
    const int64_t alive = newRun("alive");
    const int64_t otherHost = newRun("elsewhere");
    const int64_t finished = newRun("finished");
    const int64_t queued = newRun("queued-no-supervisor");
    store.markRunning(dead, 1001, "here");
    store.markRunning(alive, 1002, "here");
    store.markRunning(otherHost, 1001, "there");
    store.markRunning(finished, 1003, "here");
    store.finishRun(finished, RunState::Succeeded, 0, "");

    std::vector<int64_t> asked;
    const auto lost = store.markLostRuns("here", [&](int64_t pid) {
        asked.push_back(pid);
        return pid == 1002;
    });
    EXPECT_EQ(lost, (std::vector<int64_t>{dead}));
    std::sort(asked.begin(), asked.end());
    EXPECT_EQ(asked, (std::vector<int64_t>{1001, 1002}));
    const auto r = store.run(dead);
    EXPECT_EQ(r->state, RunState::Lost);
    EXPECT_GT(r->ended_at, 0);
    EXPECT_NE(r->exit_reason.find("1001"), std::string::npos) << r->exit_reason;
    EXPECT_EQ(store.run(alive)->state, RunState::Running);
    EXPECT_EQ(store.run(otherHost)->state, RunState::Running);
    EXPECT_EQ(store.run(finished)->state, RunState::Succeeded);
    EXPECT_EQ(store.run(queued)->state, RunState::Queued);
    // Marked once: a second pass finds only the live one, and leaves it.
    EXPECT_TRUE(store.markLostRuns("here", [](int64_t pid) { return pid == 1002; }).empty());
    EXPECT_EQ(store.run(alive)->state, RunState::Running);
}

// A lineage: from any of its runs, the parents up to the first and the newest continuation down;
// a sibling resumed earlier from the same parent is not on the way.
TEST_F(RunStoreTest, ALineageRunsFromTheFirstRunToTheNewestContinuation) {
    const int64_t first = newRun("elastic");
    auto resumeOf = [&](int64_t parent) {
        NewRun r;
        r.name = "elastic";
        r.parent_run = parent;
        return store.createRun(r);
    };
    const int64_t tried = resumeOf(first);
    const int64_t second = resumeOf(first);
    const int64_t third = resumeOf(second);
    const int64_t alone = newRun("alone");
    const std::vector<int64_t> line{first, second, third};
    EXPECT_EQ(store.lineage(first), line);
    EXPECT_EQ(store.lineage(second), line);
    EXPECT_EQ(store.lineage(third), line);
    EXPECT_EQ(store.lineage(tried), (std::vector<int64_t>{first, tried}));
    EXPECT_EQ(store.lineage(alone), std::vector<int64_t>{alone});
}

// A run in a Slurm batch job goes on without its supervisor: never lost with it, but listed as
// unfollowed for a new supervisor to follow its job.
TEST_F(RunStoreTest, ABatchJobIsNotLostWithItsSupervisor) {
    const int64_t batch = newRun("batch");
    const int64_t plain = newRun("plain");
    SlurmJob job;
    job.job_id = "41";
    job.mode = SlurmMode::Batch;
    job.state = "PENDING";
    job.reason = "Resources";
    job.queue_position = 2;
    store.setSlurmJob(batch, job);
    store.setSupervisor(batch, 3001, "here");
    EXPECT_EQ(store.run(batch)->state, RunState::Queued);
    EXPECT_EQ(store.run(batch)->supervisor_pid, 3001);
    store.markRunning(plain, 3002, "here");
    const auto dead = [](int64_t) { return false; };
    EXPECT_EQ(store.markLostRuns("here", dead), std::vector<int64_t>{plain});
    EXPECT_EQ(store.run(batch)->state, RunState::Queued);
    EXPECT_EQ(store.unfollowedBatchRuns("here", dead), std::vector<int64_t>{batch});
    EXPECT_TRUE(store.unfollowedBatchRuns("here", [](int64_t) { return true; }).empty());
    // Another host's supervisor is not this host's to judge.
    EXPECT_TRUE(store.unfollowedBatchRuns("elsewhere", dead).empty());

    job.state = "RUNNING";
    job.reason.clear();
    job.queue_position = 0;
    job.nodes = "node[1-2]";
    job.time_left_s = 3540;
    store.setSlurmJob(batch, job);
    const std::optional<SlurmJob> back = store.slurmJob(batch);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->job_id, "41");
    EXPECT_EQ(back->state, "RUNNING");
    EXPECT_EQ(back->nodes, "node[1-2]");
    EXPECT_EQ(back->time_left_s, 3540);
    EXPECT_FALSE(store.slurmJob(plain).has_value());
    store.deleteRun(batch);
    EXPECT_FALSE(store.slurmJob(batch).has_value());
    EXPECT_THROW(store.setSupervisor(plain, 1, "here"), StoreError); // lost: it ended
}

TEST_F(RunStoreTest, DataVersionChangesWhenAnotherConnectionCommits) {
    RunStore other(path);
    const int64_t v0 = store.dataVersion();
    EXPECT_EQ(store.dataVersion(), v0);
    newRun("mine"); // own commits do not count
    EXPECT_EQ(store.dataVersion(), v0);
    NewRun r;
    r.name = "theirs";
    other.createRun(r);
    const int64_t v1 = store.dataVersion();
    EXPECT_NE(v1, v0);
    EXPECT_EQ(store.dataVersion(), v1);
    ASSERT_TRUE(store.findRun("theirs"));
}

TEST_F(RunStoreTest, ReadersAreNotBlockedByAnOpenWriteTransaction) {
    const int64_t id = newRun("busy");
    RunStore reader(path);
    store.beginTransaction();
    StepEvent s;
    s.step = 1;
    store.insertMetric(id, s);
    // WAL: the reader sees the last committed state while the writer holds its transaction.
    EXPECT_TRUE(reader.metrics(id).empty());
    EXPECT_EQ(reader.run(id)->name, "busy");
    store.commit();
    EXPECT_EQ(reader.metrics(id).size(), 1u);

    store.beginTransaction();
    store.insertMetric(id, StepEvent{2});
    store.rollback();
    EXPECT_EQ(store.metrics(id).size(), 1u);
}

TEST_F(RunStoreTest, BusyWriterFailsWithAClearErrorAfterTheTimeout) {
    RunStore other(path);
    other.setBusyTimeout(20);
    store.beginTransaction();
    NewRun r;
    r.name = "blocked";
    const std::string what = errorOf([&] { other.createRun(r); });
    EXPECT_NE(what.find(path), std::string::npos) << what;
    EXPECT_NE(what.find("locked"), std::string::npos) << what;
    store.rollback();
    EXPECT_GT(other.createRun(r), 0);
}

} // namespace
} // namespace parallax

namespace parallax {
namespace {

// The store's folder seen through a read-only bind mount, as an archived store on a read-only
// share is; unmounted at the end whatever happens.
class ReadOnlyView {
public:
    explicit ReadOnlyView(const std::string& folder) : m_at(folder + ".ro") {
        std::filesystem::create_directories(m_at);
        if (::mount(folder.c_str(), m_at.c_str(), nullptr, MS_BIND, nullptr) != 0) return;
        m_mounted = true;
        m_readOnly = ::mount(nullptr, m_at.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr) == 0;
    }
    ~ReadOnlyView() {
        if (m_mounted) ::umount2(m_at.c_str(), MNT_DETACH);
        std::error_code ec;
        std::filesystem::remove(m_at, ec);
    }
    bool ok() const { return m_mounted && m_readOnly; }
    std::string file(const std::string& name) const { return m_at + "/" + name; }

private:
    std::string m_at;
    bool m_mounted = false;
    bool m_readOnly = false;
};

// A console watching a store that a supervisor is creating opens the new file at the same moment.
// Both must open it: the switch to WAL, which SQLite refuses at once while another connection
// holds the lock, waits as every other statement does.
TEST(NewStore, ProcessesThatOpenItAtOnceAllSucceed) {
    constexpr int kRounds = 12;
    constexpr int kProcesses = 6;
    for (int round = 0; round < kRounds; ++round) {
        TempDir dir;
        const std::string path = dir.file("parallax.db");
        int gate[2];
        ASSERT_EQ(pipe(gate), 0);
        std::vector<pid_t> children;
        for (int i = 0; i < kProcesses; ++i) {
            const pid_t pid = fork();
            ASSERT_GE(pid, 0);
            if (pid == 0) {
                close(gate[1]);
                char go = 0;
                (void)!read(gate[0], &go, 1); // returns when the parent closes its end
                int status = 0;
                try {
                    RunStore store(path);
                    NewRun r;
                    r.name = "opener" + std::to_string(i);
                    store.createRun(r);
                } catch (const std::exception& e) {
                    std::fprintf(stderr, "process %d: %s\n", i, e.what());
                    status = 3;
                }
                _exit(status);
            }
            children.push_back(pid);
        }
        close(gate[0]);
        close(gate[1]); // every child starts now
        for (pid_t pid : children) {
            int status = 0;
            ASSERT_EQ(waitpid(pid, &status, 0), pid);
            ASSERT_TRUE(WIFEXITED(status));
            EXPECT_EQ(WEXITSTATUS(status), 0) << "round " << round << ": a process could not open the new store";
        }
        RunStore store(path);
        EXPECT_EQ(store.listRuns({}).size(), static_cast<size_t>(kProcesses)) << "round " << round;
    }
}

// A store at `path` holding one finished run, "archived", with one step of loss 1.5; its id.
int64_t archivedStore(const std::string& path) {
    RunStore store(path);
    NewRun r;
    r.name = "archived";
    const int64_t id = store.createRun(r);
    StepEvent e;
    e.step = 0;
    e.loss = 1.5;
    store.insertMetric(id, e);
    store.finishRun(id, RunState::Succeeded, 0, "");
    return id;
}

TEST(ReadOnlyStore, IsListedAndReadWithOrWithoutItsWalFiles) {
    TempDir dir;
    const std::string path = dir.file("parallax.db");
    const int64_t id = archivedStore(path);
    ReadOnlyView view(dir.path());
    if (!view.ok()) GTEST_SKIP() << "a read-only bind mount is not permitted here (needs root)";
    for (bool walFiles : {true, false}) {
        if (!walFiles) {
            // As an earlier version left it: its last writer deleted the WAL and its index.
            std::filesystem::remove(path + "-wal");
            std::filesystem::remove(path + "-shm");
        }
        RunStore store(view.file("parallax.db"));
        const std::vector<RunRecord> runs = store.listRuns();
        ASSERT_EQ(runs.size(), 1u) << "WAL files present: " << walFiles;
        EXPECT_EQ(runs[0].name, "archived");
        ASSERT_EQ(store.metrics(id).size(), 1u);
        EXPECT_EQ(store.metrics(id)[0].loss, 1.5);
        const std::string error = errorOf([&] { store.setNotes(id, "cannot"); });
        EXPECT_NE(error.find("read"), std::string::npos) << error;
    }
}

// An archived store from before an event had its table reads none of those rows, and nothing else
// fails: the generated tables cannot be added to a file nobody may write.
TEST(ReadOnlyStore, ThatPredatesAnEventsTableReadsNoneOfItsRows) {
    TempDir dir;
    const std::string path = dir.file("parallax.db");
    const int64_t id = archivedStore(path);
    RawDb(path).exec("DROP TABLE rank_steps");
    ReadOnlyView view(dir.path());
    if (!view.ok()) GTEST_SKIP() << "a read-only bind mount is not permitted here (needs root)";
    RunStore store(view.file("parallax.db"));
    EXPECT_TRUE(store.events<RankStepEvent>(id).empty());
    ASSERT_TRUE(store.run(id).has_value());
    EXPECT_EQ(store.run(id)->name, "archived");
}

// A text search of an archived store writes no index beside it (nobody may): it is made in memory.
TEST(ReadOnlyStore, ItsLogsAreSearched) {
    TempDir dir;
    const std::string path = dir.file("parallax.db");
    const int64_t id = archivedStore(path);
    {
        RunStore store(path);
        for (const char* text : {"NCCL error: unhandled system error", "step 3 done", "nccl warn retrying"}) {
            LogRow row;
            row.message = text;
            store.insertLog(id, row);
        }
    }
    std::filesystem::remove(path + ".logindex");
    ReadOnlyView view(dir.path());
    if (!view.ok()) GTEST_SKIP() << "a read-only bind mount is not permitted here (needs root)";
    RunStore store(view.file("parallax.db"));
    LogQuery q;
    q.match = "nccl";
    const std::vector<LogRow> found = store.logs(id, q);
    ASSERT_EQ(found.size(), 2u);
    EXPECT_EQ(found[0].message, "NCCL error: unhandled system error");
    EXPECT_EQ(store.logCount(id, q), 2);
    EXPECT_FALSE(std::filesystem::exists(path + ".logindex"));
}

TEST(HostRecords, StatusPerHostAndPendingCleanupsOutliveTheirRun) {
    TempDir dir;
    RunStore store(dir.file("parallax.db"));
    NewRun r;
    r.name = "on-hosts";
    const int64_t run = store.createRun(r);
    HostStatus a;
    a.host = "node1";
    a.state = HostState::Answering;
    a.last_answer = 100;
    a.latency_ms = 3.5;
    store.setHostStatus(run, a);
    HostStatus b = a;
    b.host = "node2";
    b.state = HostState::Silent;
    b.detail = "silent for 12 s";
    b.latency_ms = -1;
    store.setHostStatus(run, b);
    b.state = HostState::Lost;
    store.setHostStatus(run, b); // replaces
    const std::vector<HostStatus> hosts = store.hostStatuses(run);
    ASSERT_EQ(hosts.size(), 2u);
    EXPECT_EQ(hosts[0].host, "node1");
    EXPECT_DOUBLE_EQ(hosts[0].latency_ms, 3.5);
    EXPECT_EQ(hosts[1].state, HostState::Lost);
    EXPECT_EQ(hosts[1].latency_ms, -1);
    EXPECT_EQ(hosts[1].detail, "silent for 12 s");

    PendingCleanup c;
    c.run = run;
    c.host = "node2";
    c.run_dir = "/shared/runs/1";
    store.addPendingCleanup(c);
    store.notePendingCleanupAttempt(run, "node2", "no answer within 5 s");
    store.deleteRun(run); // processes may still run there: the cleanup stays due
    EXPECT_TRUE(store.hostStatuses(run).empty());
    ASSERT_EQ(store.pendingCleanups().size(), 1u);
    EXPECT_EQ(store.pendingCleanups()[0].attempts, 1);
    EXPECT_EQ(store.pendingCleanups()[0].last_error, "no answer within 5 s");
    store.removePendingCleanup(run, "node2");
    EXPECT_TRUE(store.pendingCleanups().empty());
}

} // namespace
} // namespace parallax

#include "core/store/BatchedWriter.h"
#include "tests/core/store/RawDb.h"
#include "tests/core/store/TempDir.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>

namespace parallax {
namespace {

using namespace std::chrono_literals;
using test::RawDb;
using test::TempDir;

class BatchedWriterTest : public ::testing::Test {
protected:
    TempDir dir;
    std::string path = dir.file("parallax.db");
    RunStore store{path};
    RunStore reader{path}; // another connection, as the console would have
    int64_t run = newRun();

    int64_t newRun() {
        NewRun r;
        r.name = "batched";
        return store.createRun(r);
    }
};

StepEvent step(int64_t n) {
    StepEvent e;
    e.step = n;
    e.loss = 1.0 / static_cast<double>(n + 1);
    e.tokens_per_s = 1000.0 + static_cast<double>(n);
    e.mfu = 0.25;
    return e;
}

// One fast step (the one after a checkpoint or a hang) is no run's throughput.
TEST_F(BatchedWriterTest, TheSummarysTokensPerSecondIsTheMedianOfTheLastSteps) {
    BatchedWriter w(store, run, 1h, 1000);
    for (int i = 0; i < 30; ++i) {
        StepEvent e = step(i);
        e.tokens_per_s = i == 29 ? 5800 : 800;
        w.add(e);
    }
    w.flush();
    EXPECT_EQ(reader.run(run)->tokens_per_s, 800.0);
    EXPECT_EQ(reader.metrics(run).back().tokens_per_s, 5800.0) << "the step itself keeps its figure";
}

TEST_F(BatchedWriterTest, RowsBecomeVisibleToOtherConnectionsAtFlush) {
    BatchedWriter w(store, run, 1h, 1000);
    for (int i = 0; i < 10; ++i) w.add(step(i));
    LogRow line;
    line.message = "hello from rank 0";
    w.add(line);
    EXPECT_EQ(w.pendingRows(), 11u);
    EXPECT_TRUE(reader.metrics(run).empty());
    EXPECT_EQ(reader.logCount(run), 0);
    EXPECT_EQ(reader.run(run)->last_step, -1);

    const int64_t before = reader.dataVersion();
    w.flush();
    EXPECT_EQ(w.pendingRows(), 0u);
    EXPECT_NE(reader.dataVersion(), before);
    EXPECT_EQ(reader.metrics(run).size(), 10u);
    EXPECT_EQ(reader.logCount(run), 1);
    // The summary is the batch's last step, its tokens/s the median of the last steps (1001 to
    // 1009; step 0's warm-up left out).
    const auto r = reader.run(run);
    EXPECT_EQ(r->last_step, 9);
    EXPECT_EQ(r->last_loss, step(9).loss);
    EXPECT_EQ(r->tokens_per_s, 1005.0);
    EXPECT_EQ(r->mfu, 0.25);

    w.flush(); // nothing pending: a no-op
    EXPECT_EQ(reader.metrics(run).size(), 10u);
}

TEST_F(BatchedWriterTest, FlushesWhenMaxRowsArePending) {
    BatchedWriter w(store, run, 1h, 10);
    for (int i = 0; i < 25; ++i) w.add(step(i));
    EXPECT_EQ(reader.metrics(run).size(), 20u);
    EXPECT_EQ(w.pendingRows(), 5u);
    EXPECT_EQ(reader.run(run)->last_step, 19);
}

TEST_F(BatchedWriterTest, MaybeFlushWaitsForTheInterval) {
    {
        BatchedWriter slow(store, run, 1h, 1000);
        EXPECT_FALSE(slow.timeUntilDue());
        EXPECT_FALSE(slow.maybeFlush());
        slow.add(step(1));
        ASSERT_TRUE(slow.timeUntilDue());
        EXPECT_GT(*slow.timeUntilDue(), 1h - 1min);
        EXPECT_FALSE(slow.maybeFlush());
        EXPECT_TRUE(reader.metrics(run).empty());
        slow.flush();
    }
    BatchedWriter fast(store, run, 0ms, 1000);
    fast.add(step(2));
    EXPECT_EQ(fast.timeUntilDue(), 0ms);
    EXPECT_TRUE(fast.maybeFlush());
    EXPECT_FALSE(fast.maybeFlush());
    EXPECT_EQ(reader.metrics(run).size(), 2u);
}

TEST_F(BatchedWriterTest, DestructorFlushes) {
    {
        BatchedWriter w(store, run, 1h, 1000);
        w.add(step(1));
        DeviceEvent d;
        d.t = 5;
        w.add(d);
        EXPECT_TRUE(reader.metrics(run).empty());
    }
    EXPECT_EQ(reader.metrics(run).size(), 1u);
    EXPECT_EQ(reader.deviceSamples(run).size(), 1u);
}

TEST_F(BatchedWriterTest, TelemetryEventsGoWhereTheyBelong) {
    BatchedWriter w(store, run, 1h, 1000);
    RunStartEvent start;
    start.world = 2;
    start.params = 4096;
    start.hosts = {"n0", "n1"};
    w.add(TelemetryEvent{start});
    w.add(TelemetryEvent{step(1)});
    w.add(TelemetryEvent{step(2)});
    DeviceEvent d;
    d.rank = 1;
    d.t = 3;
    w.add(TelemetryEvent{d});
    SpanEvent s;
    s.step = 2;
    s.kind = "F";
    w.add(TelemetryEvent{s});
    CommEvent c;
    c.last_seq = 17;
    w.add(TelemetryEvent{c});
    CheckpointEvent k;
    k.step = 2;
    k.path = "ckpt";
    w.add(TelemetryEvent{k});
    LogEvent l;
    l.rank = 1;
    l.level = "warn";
    l.message = "slow rank";
    l.t = 7;
    w.add(TelemetryEvent{l});
    RunEndEvent end;
    end.status = runStateName(RunState::Failed);
    end.reason = "boom";
    end.step = 2;
    w.add(TelemetryEvent{end});
    w.flush();

    const auto r = reader.run(run);
    EXPECT_EQ(r->world_size, 2);
    EXPECT_EQ(r->params, 4096);
    EXPECT_EQ(r->hosts, (std::vector<std::string>{"n0", "n1"}));
    EXPECT_EQ(r->last_step, 2);
    EXPECT_EQ(reader.metrics(run).size(), 2u);
    EXPECT_EQ(reader.deviceSamples(run).size(), 1u);
    EXPECT_EQ(reader.spans(run, 2).size(), 1u);
    EXPECT_EQ(reader.comms(run).at(0).last_seq, 17);
    EXPECT_EQ(reader.checkpoints(run).at(0).path, "ckpt");
    const auto logs = reader.logs(run);
    ASSERT_EQ(logs.size(), 2u);
    EXPECT_EQ(logs[0].message, "slow rank");
    EXPECT_EQ(logs[0].stream, "telemetry");
    EXPECT_EQ(logs[0].host, "n1");
    EXPECT_EQ(logs[0].level, LogLevel::Warn);
    EXPECT_EQ(logs[0].rank, 1);
    EXPECT_EQ(logs[0].t, 7);
    EXPECT_EQ(logs[1].level, LogLevel::Error);
    EXPECT_NE(logs[1].message.find("failed at step 2: boom"), std::string::npos) << logs[1].message;
}

TEST_F(BatchedWriterTest, FailedFlushKeepsEveryRowForTheNextOne) {
    BatchedWriter w(store, run, 1h, 1000);
    for (int i = 0; i < 5; ++i) w.add(step(i));
    store.setBusyTimeout(20);
    RawDb other(path);
    other.exec("BEGIN IMMEDIATE"); // another process holds the write lock
    EXPECT_THROW(w.flush(), StoreError);
    EXPECT_EQ(w.pendingRows(), 5u);
    w.add(step(5));
    other.exec("ROLLBACK");
    w.flush();
    EXPECT_EQ(w.pendingRows(), 0u);
    const auto rows = reader.metrics(run);
    ASSERT_EQ(rows.size(), 6u);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(rows[i].step, i);
}

volatile std::sig_atomic_t g_stopRequested = 0;
extern "C" void onStopSignal(int) { g_stopRequested = 1; }

// A supervisor asked to stop (SIGTERM) while rows are pending leaves its read loop and unwinds;
// every row it had accepted must be in the store afterwards.
TEST(BatchedWriterStop, RowsAddedBeforeSigtermAreWrittenOnTheWayOut) {
    TempDir dir;
    const std::string path = dir.file("stop.db");
    int64_t run = 0;
    {
        RunStore setup(path);
        NewRun r;
        r.name = "stopped";
        run = setup.createRun(r);
    } // closed: the child opens its own connection, never one inherited across fork()

    int pipeFd[2];
    ASSERT_EQ(pipe(pipeFd), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        close(pipeFd[0]);
        struct sigaction sa {};
        sa.sa_handler = onStopSignal;
        sigaction(SIGTERM, &sa, nullptr);
        int status = 0;
        try {
            RunStore store(path);
            int64_t added = 0;
            {
                BatchedWriter w(store, run, 1h, 1000000); // only the destructor writes
                while (!g_stopRequested) {
                    w.add(step(added));
                    if (++added == 100) (void)!write(pipeFd[1], "r", 1);
                    usleep(20);
                }
                (void)!write(pipeFd[1], &added, sizeof added);
            }
        } catch (...) {
            status = 3;
        }
        _exit(status);
    }
    close(pipeFd[1]);
    char ready = 0;
    ASSERT_EQ(read(pipeFd[0], &ready, 1), 1);
    ASSERT_EQ(kill(pid, SIGTERM), 0);
    int64_t added = -1;
    ASSERT_EQ(read(pipeFd[0], &added, sizeof added), static_cast<ssize_t>(sizeof added));
    close(pipeFd[0]);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);

    ASSERT_GE(added, 100);
    RunStore store(path);
    const auto rows = store.metrics(run);
    ASSERT_EQ(static_cast<int64_t>(rows.size()), added);
    EXPECT_EQ(rows.back().step, added - 1);
    EXPECT_EQ(store.run(run)->last_step, added - 1);
}

} // namespace
} // namespace parallax

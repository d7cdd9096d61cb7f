#include "core/store/EventTables.h"
#include "core/store/MetricChunk.h"
#include "core/store/RunStore.h"
#include "core/store/Schema.h"
#include "core/store/SpanChunk.h"
#include "tests/core/store/RawDb.h"
#include "tests/core/store/TempDir.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace parallax {
namespace {

using test::RawDb;
using test::TempDir;

// A BLOB literal of SQL: X'...'.
std::string blobLiteral(const std::string& bytes) {
    static const char* hex = "0123456789ABCDEF";
    std::string out = "X'";
    for (unsigned char c : bytes) {
        out += hex[c >> 4];
        out += hex[c & 0xF];
    }
    return out + "'";
}

StepEvent chunkStep(int64_t step) {
    StepEvent e;
    e.step = step;
    e.loss = 3.5 - static_cast<double>(step);
    e.lr = 1e-3;
    e.grad_norm = 0.5;
    e.tokens_per_s = 1000;
    e.samples_per_s = 8;
    e.step_ms = 120;
    e.step_ms_min = 110;
    e.step_ms_max = 130;
    e.slowest_rank = 1;
    e.mfu = 0.25;
    e.tokens = 4096 * (step + 1);
    e.peak_mem = 2e9;
    e.t = 50.0 + static_cast<double>(step);
    return e;
}

// A store as the build of schema 9 left it: the migrations up to 9, the generated tables that
// build made when it opened the store, and a row in every table.
void writeVersionNineStore(const std::string& path) {
    RawDb raw(path);
    const std::vector<SchemaMigration>& all = storeMigrations();
    applyMigrations(raw.handle(), path, {all.begin(), all.begin() + 9});
    ASSERT_EQ(raw.integer("PRAGMA user_version"), 9);
    raw.exec(eventTableSpec<UnitTimeEvent>().createSql());
    raw.exec(eventTableSpec<CollectiveTimeEvent>().createSql());
    raw.exec("INSERT INTO runs (id, name, state, created_at, started_at, ended_at, hosts, world_size, exit_code, "
             "exit_reason, supervisor_pid, supervisor_host, tags, notes, run_dir, launch_command, model_kind, layout, "
             "params, steps_total, last_step, last_loss, tokens_per_s, mfu, run_start, spec_toml, output_offset) "
             "VALUES (1, 'old', 'succeeded', 1.0, 2.0, 9.0, '[\"n1\",\"n2\"]', 2, 0, 'done', 77, 'n1', "
             "'[\"base\"]', 'a note', '/runs/1', 'parallax-cli run s.toml', 'gpt', 'dp2 tp1 pp1 zero0', 1234, "
             "10, 3, 0.5, 900.0, 0.3, "
             "'{\"clock_offsets\":[0.0,0.25],\"device\":\"cpu\",\"devices\":[\"cpu\",\"cpu\"],\"dp\":2,"
             "\"flops_per_token\":6000.0,\"hosts\":[\"n1\",\"n2\"],\"params\":1234,\"peak_flops\":0.0,"
             "\"pids\":[10,11],\"pp\":1,\"schedule\":\"1f1b\",\"slurm_job\":\"\",\"slurm_nodes\":\"\","
             "\"start_step\":0,\"t\":2.5,\"tp\":1,\"world\":2,\"zero\":0}', 'name = \"old\"', 4096)");
    raw.exec("INSERT INTO runs (id, name, state, created_at, parent_run) VALUES (2, 'resumed', 'queued', 3.0, 1)");
    raw.exec("INSERT INTO metrics (run, step, t, loss, lr, grad_norm, tokens_per_s, samples_per_s, step_ms, "
             "step_ms_min, step_ms_max, slowest_rank, mfu, tokens, peak_mem) VALUES "
             "(1, 0, 49.0, 4.0, 0.001, 1.0, 10.0, 1.0, 100.0, 90.0, 110.0, 0, 0.1, 4096, 1e9)");
    const std::vector<StepEvent> steps = {chunkStep(1), chunkStep(2), chunkStep(3)};
    raw.exec("INSERT INTO metric_chunks (run, first_step, last_step, steps, data) VALUES (1, 1, 3, 3, " +
             blobLiteral(MetricChunk::encode(steps.data(), steps.size())) + ")");
    raw.exec("INSERT INTO spans (run, step, rank, start, stage, microbatch, kind, end_t) VALUES "
             "(1, 2, 0, 60.0, 0, 0, 'F', 60.5)");
    SpanEvent span;
    span.rank = 1;
    span.stage = 1;
    span.step = 2;
    span.microbatch = 1;
    span.kind = "B";
    span.start = 61.0;
    span.end = 61.75;
    raw.exec("INSERT INTO span_chunks (run, step, rank, first_start, spans, data) VALUES (1, 2, 1, 61.0, 1, " +
             blobLiteral(SpanChunk::encode({&span})) + ")");
    raw.exec("INSERT INTO device_samples (run, t, rank, device, host, util, mem_used, mem_total, power_w, temp_c, "
             "sm_clock_mhz, cpu_pct, rss) VALUES (1, 55.0, 1, 3, 'n2', 97.5, 7e10, 8e10, 600.0, 65.0, 1980.0, NULL, "
             "NULL), (1, 54.0, 0, -1, 'n1', NULL, NULL, NULL, NULL, NULL, NULL, 350.0, 2.5e9)");
    raw.exec("INSERT INTO comms (run, t, rank, collectives, bytes, last_seq) VALUES (1, 56.0, 0, 12, 4096, 11), "
             "(1, 56.0, 1, 13, 8192, 12)");
    // The same checkpoint recorded twice (ids 1 and 3): one row from schema 10 on, the later one.
    raw.exec("INSERT INTO checkpoints (id, run, step, path, bytes, ms, layout, t) VALUES "
             "(1, 1, 2, '/runs/1/checkpoints/step-2', 100, 5.0, 'dp2 tp1 pp1 zero0', 57.0), "
             "(2, 1, 1, '/runs/1/checkpoints/step-1', 90, 4.0, 'dp2 tp1 pp1 zero0', 56.5), "
             "(3, 1, 2, '/runs/1/checkpoints/step-2', 120, 6.0, 'dp2 tp1 pp1 zero0', 58.0)");
    raw.exec("INSERT INTO logs (id, run, t, rank, host, level, stream, message) VALUES "
             "(1, 1, 50.0, 0, 'n1', 1, 'stdout', 'step 1 done'), (2, 1, 51.0, 1, 'n2', 3, 'stderr', 'zyzzyva failed')");
    raw.exec("INSERT INTO host_status (run, host, state, last_answer, latency_ms, detail, t) VALUES "
             "(1, 'n2', 'silent', 40.0, 12.5, 'silent for 12 s', 41.0)");
    raw.exec("INSERT INTO pending_cleanups (run, host, run_dir, since, attempts, last_error) VALUES "
             "(1, 'n2', '/runs/1', 42.0, 2, 'ssh: timeout')");
    raw.exec("INSERT INTO rank_steps (run, step, rank, compute_ms, wait_ms, t) VALUES (1, 2, 1, 80.0, 20.0, 52.0)");
    raw.exec("INSERT INTO alerts (run, kind, message, since, t, active, ranks, step) VALUES "
             "(1, 'straggler', 'rank 1 is slow', 43.0, 44.0, 0, '1', 2)");
    raw.exec("INSERT INTO slurm_jobs (run, job_id, mode, state, reason, nodes, queue_position, time_left_s, t) VALUES "
             "(1, '4242', 'batch', 'COMPLETED', '', 'n[1-2]', 0, -1, 45.0)");
    raw.exec("INSERT INTO unit_times (run, rank, stage, unit, kind, forward_ms, backward_ms, t) VALUES "
             "(1, 0, 0, 1, 'block', 1.5, 3.0, 58.5)");
    raw.exec("INSERT INTO collective_times (run, rank, \"group\", op, ranks, bytes, ms, t) VALUES "
             "(1, 0, 'world', 'all_reduce', 2, 1048576, 0.75, 58.75)");
}

void expectRunsAsWritten(RunStore& store) {
    const std::optional<RunRecord> r = store.run(1);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->hosts, (std::vector<std::string>{"n1", "n2"}));
    EXPECT_EQ(r->tags, std::vector<std::string>{"base"});
    EXPECT_EQ(r->notes, "a note");
    EXPECT_EQ(r->exit_reason, "done");
    EXPECT_EQ(r->last_loss, 0.5);
    EXPECT_EQ(r->mfu, 0.3);
    EXPECT_EQ(store.outputOffset(1), 4096);
    EXPECT_EQ(store.lineage(1), (std::vector<int64_t>{1, 2}));
    const std::optional<RunStartEvent> start = store.runStart(1);
    ASSERT_TRUE(start);
    EXPECT_EQ(start->world, 2);
    EXPECT_EQ(start->dp, 2);
    EXPECT_EQ(start->schedule, "1f1b");
    EXPECT_EQ(start->flops_per_token, 6000.0);
    EXPECT_EQ(start->devices, (std::vector<std::string>{"cpu", "cpu"}));
    EXPECT_EQ(start->clock_offsets, (std::vector<double>{0.0, 0.25}));
    EXPECT_EQ(start->pids, (std::vector<int64_t>{10, 11}));
    EXPECT_EQ(start->t, 2.5);
}

void expectTelemetryAsWritten(RunStore& store) {
    const std::vector<StepEvent> steps = store.metrics(1);
    ASSERT_EQ(steps.size(), 4u);
    EXPECT_EQ(steps[0].loss, 4.0);
    for (int64_t s = 1; s <= 3; ++s) {
        EXPECT_EQ(steps[s].loss, chunkStep(s).loss);
        EXPECT_EQ(steps[s].tokens, chunkStep(s).tokens);
        EXPECT_EQ(steps[s].t, chunkStep(s).t);
    }
    const std::vector<SpanEvent> spans = store.spans(1, 2);
    ASSERT_EQ(spans.size(), 2u);
    EXPECT_EQ(spans[0].kind, "F");
    EXPECT_EQ(spans[1].kind, "B");
    EXPECT_EQ(spans[1].end, 61.75);
    const std::vector<DeviceEvent> devices = store.deviceSamples(1);
    ASSERT_EQ(devices.size(), 2u);
    EXPECT_EQ(devices[0].cpu_pct, 350.0);
    EXPECT_TRUE(std::isnan(devices[0].util));
    EXPECT_EQ(devices[1].device, 3);
    EXPECT_EQ(devices[1].host, "n2");
    EXPECT_EQ(devices[1].sm_clock_mhz, 1980.0);
    const std::vector<CommEvent> comms = store.comms(1);
    ASSERT_EQ(comms.size(), 2u);
    EXPECT_EQ(comms[1].collectives, 13);
    EXPECT_EQ(comms[1].bytes, 8192);
    EXPECT_EQ(comms[1].last_seq, 12);
    EXPECT_TRUE(comms[1].groups.empty()); // schema 9 kept no more of a comm
    EXPECT_TRUE(comms[1].pending_op.empty());
    const std::vector<CheckpointEvent> checkpoints = store.checkpoints(1);
    ASSERT_EQ(checkpoints.size(), 2u);
    EXPECT_EQ(checkpoints[0].step, 1);
    EXPECT_EQ(checkpoints[1].bytes, 120);
    EXPECT_EQ(checkpoints[1].ms, 6.0);
    EXPECT_EQ(checkpoints[1].layout, "dp2 tp1 pp1 zero0");
    EXPECT_EQ(checkpoints[1].t, 58.0);
    ASSERT_EQ(store.events<RankStepEvent>(1).size(), 1u);
    EXPECT_EQ(store.events<RankStepEvent>(1)[0].wait_ms, 20.0);
    ASSERT_EQ(store.events<UnitTimeEvent>(1).size(), 1u);
    EXPECT_EQ(store.events<UnitTimeEvent>(1)[0].backward_ms, 3.0);
    ASSERT_EQ(store.events<CollectiveTimeEvent>(1).size(), 1u);
    EXPECT_EQ(store.events<CollectiveTimeEvent>(1)[0].bytes, 1048576);
}

void expectRecordsAsWritten(RunStore& store) {
    LogQuery search;
    search.match = "zyzzyva";
    ASSERT_EQ(store.logs(1, search).size(), 1u);
    EXPECT_EQ(store.logs(1, search)[0].level, LogLevel::Error);
    EXPECT_EQ(store.logCount(1), 2);
    ASSERT_EQ(store.hostStatuses(1).size(), 1u);
    EXPECT_EQ(store.hostStatuses(1)[0].latency_ms, 12.5);
    ASSERT_EQ(store.pendingCleanups().size(), 1u);
    EXPECT_EQ(store.pendingCleanups()[0].last_error, "ssh: timeout");
    ASSERT_EQ(store.alerts(1).size(), 1u);
    EXPECT_EQ(store.alerts(1)[0].ranks, std::vector<int>{1});
    EXPECT_EQ(store.alerts(1)[0].step, 2);
    ASSERT_TRUE(store.slurmJob(1));
    EXPECT_EQ(store.slurmJob(1)->nodes, "n[1-2]");
    EXPECT_EQ(store.storeId().size(), 32u);
}

// Schema 10 keeps device samples, comms and checkpoints in tables generated from their events:
// a store of schema 9 is upgraded when opened, and every row it had reads back.
TEST(PreviousSchema, AVersionNineStoreIsUpgradedAndEveryRowReadsBack) {
    TempDir dir;
    const std::string path = dir.file("v9.db");
    writeVersionNineStore(path);
    if (HasFatalFailure()) return;
    {
        RunStore store(path);
        EXPECT_EQ(store.schemaVersion(), RunStore::kSchemaVersion);
        expectRunsAsWritten(store);
        expectTelemetryAsWritten(store);
        expectRecordsAsWritten(store);
        // The upgraded tables take new rows with every field.
        CommEvent c;
        c.rank = 2;
        c.groups = {"world", "dp"};
        c.pending_op = "all_reduce";
        c.t = 57.0;
        store.insertComm(1, c);
        EXPECT_EQ(store.comms(1).back().groups, c.groups);
        CheckpointEvent k;
        k.step = 3;
        k.path = "/runs/1/checkpoints/step-3";
        store.insertCheckpoint(1, k);
        EXPECT_EQ(store.checkpoints(1).size(), 3u);
    }
    RawDb raw(path);
    EXPECT_EQ(raw.integer("SELECT count(*) FROM pragma_table_info('checkpoints') WHERE name = 'id'"), 0);
    EXPECT_EQ(raw.integer("SELECT count(*) FROM pragma_table_info('comms') WHERE name = 'pending_op'"), 1);
}

} // namespace
} // namespace parallax

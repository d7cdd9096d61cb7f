#include "core/store/RunStore.h"
#include "tests/core/store/RawDb.h"
#include "tests/core/store/TempDir.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace parallax {
namespace {

using test::RawDb;
using test::TempDir;

class TelemetryRowsTest : public ::testing::Test {
protected:
    TempDir dir;
    std::string path = dir.file("parallax.db");
    RunStore store{path};
    int64_t run = newRun("telemetry");

    int64_t newRun(const std::string& name) {
        NewRun r;
        r.name = name;
        return store.createRun(r);
    }
};

StepEvent sampleStep(int64_t step) {
    StepEvent e;
    e.step = step;
    e.loss = 2.5 - 0.01 * static_cast<double>(step);
    e.lr = 3e-4;
    e.grad_norm = 0.75;
    e.tokens_per_s = 123456.5;
    e.samples_per_s = 64.25;
    e.step_ms = 250.5;
    e.step_ms_min = 240.25;
    e.step_ms_max = 260.75;
    e.slowest_rank = 3;
    e.mfu = 0.37;
    e.tokens = 1024 * (step + 1);
    e.peak_mem = 7.5e9;
    e.t = 1700000000.0 + static_cast<double>(step);
    return e;
}

void expectSameStep(const StepEvent& a, const StepEvent& b) {
    EXPECT_EQ(a.step, b.step);
    EXPECT_EQ(a.loss, b.loss);
    EXPECT_EQ(a.lr, b.lr);
    EXPECT_EQ(a.grad_norm, b.grad_norm);
    EXPECT_EQ(a.tokens_per_s, b.tokens_per_s);
    EXPECT_EQ(a.samples_per_s, b.samples_per_s);
    EXPECT_EQ(a.step_ms, b.step_ms);
    EXPECT_EQ(a.step_ms_min, b.step_ms_min);
    EXPECT_EQ(a.step_ms_max, b.step_ms_max);
    EXPECT_EQ(a.slowest_rank, b.slowest_rank);
    EXPECT_EQ(a.mfu, b.mfu);
    EXPECT_EQ(a.tokens, b.tokens);
    EXPECT_EQ(a.peak_mem, b.peak_mem);
    EXPECT_EQ(a.t, b.t);
}

TEST_F(TelemetryRowsTest, MetricsRoundTripEveryField) {
    for (int64_t s = 0; s < 5; ++s) store.insertMetric(run, sampleStep(s));
    const auto all = store.metrics(run);
    ASSERT_EQ(all.size(), 5u);
    for (int64_t s = 0; s < 5; ++s) expectSameStep(all[s], sampleStep(s));

    const auto tail = store.metrics(run, 2);
    ASSERT_EQ(tail.size(), 2u);
    EXPECT_EQ(tail[0].step, 3);
    EXPECT_EQ(tail[1].step, 4);
    EXPECT_TRUE(store.metrics(run + 1).empty());
}

TEST_F(TelemetryRowsTest, BatchInsertsWriteEveryRowOfFullAndPartialGroups) {
    // 37 rows: two statements of 16 rows, then 5 single rows.
    std::vector<StepEvent> steps;
    std::vector<DeviceEvent> devices;
    std::vector<SpanEvent> spans;
    std::vector<CommEvent> comms;
    for (int i = 0; i < 37; ++i) {
        steps.push_back(sampleStep(i));
        DeviceEvent d;
        d.rank = i % 4;
        d.device = i % 4;
        d.host = "host-" + std::to_string(i);
        d.util = i;
        d.rss = 1000.0 * i;
        d.t = 10.0 + i;
        devices.push_back(d);
        SpanEvent sp;
        sp.rank = 0;
        sp.step = 5;
        sp.microbatch = i;
        sp.kind = i % 2 ? "B" : "F";
        sp.start = 0.01 * i;
        sp.end = 0.01 * i + 0.005;
        spans.push_back(sp);
        CommEvent c;
        c.rank = i;
        c.last_seq = 100 + i;
        c.t = 3.0;
        comms.push_back(c);
    }
    store.insertMetrics(run, steps);
    store.insertDeviceSamples(run, devices);
    store.insertSpans(run, spans);
    store.insertComms(run, comms);

    const auto gotSteps = store.metrics(run);
    ASSERT_EQ(gotSteps.size(), 37u);
    for (int i = 0; i < 37; ++i) expectSameStep(gotSteps[i], steps[i]);
    const auto gotDevices = store.deviceSamples(run);
    ASSERT_EQ(gotDevices.size(), 37u);
    for (int i = 0; i < 37; ++i) {
        EXPECT_EQ(gotDevices[i].host, devices[i].host);
        EXPECT_EQ(gotDevices[i].util, devices[i].util);
        EXPECT_EQ(gotDevices[i].rss, devices[i].rss);
        EXPECT_EQ(gotDevices[i].rank, devices[i].rank);
    }
    const auto gotSpans = store.spans(run, 5);
    ASSERT_EQ(gotSpans.size(), 37u);
    for (int i = 0; i < 37; ++i) {
        EXPECT_EQ(gotSpans[i].microbatch, i);
        EXPECT_EQ(gotSpans[i].kind, spans[i].kind);
        EXPECT_EQ(gotSpans[i].end, spans[i].end);
    }
    const auto gotComms = store.comms(run);
    ASSERT_EQ(gotComms.size(), 37u);
    for (int i = 0; i < 37; ++i) EXPECT_EQ(gotComms[i].last_seq, 100 + i);
}

TEST_F(TelemetryRowsTest, BatchInsertsJoinTheCallersTransaction) {
    store.beginTransaction();
    store.insertMetrics(run, {sampleStep(1), sampleStep(2)});
    LogRow l;
    l.message = "inside a transaction";
    store.insertLog(run, l);
    store.rollback();
    EXPECT_TRUE(store.metrics(run).empty());
    EXPECT_EQ(store.logCount(run), 0);
    LogQuery q;
    q.match = "transaction";
    EXPECT_EQ(store.logCount(run, q), 0);
    RawDb index(store.logIndexPath());
    EXPECT_EQ(index.integer("SELECT count(*) FROM logs_fts WHERE logs_fts MATCH 'transaction'"), 0);
}

TEST_F(TelemetryRowsTest, MetricsKeepNaNAndInfinity) {
    StepEvent e = sampleStep(0);
    e.loss = std::numeric_limits<double>::quiet_NaN();
    e.grad_norm = std::numeric_limits<double>::infinity();
    store.insertMetric(run, e);
    const auto got = store.metrics(run);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_TRUE(std::isnan(got[0].loss));
    EXPECT_TRUE(std::isinf(got[0].grad_norm));
    EXPECT_EQ(got[0].lr, e.lr);
}

TEST_F(TelemetryRowsTest, RepeatedStepReplacesTheRow) {
    store.insertMetric(run, sampleStep(1));
    StepEvent again = sampleStep(1);
    again.loss = 9.0;
    store.insertMetric(run, again);
    const auto got = store.metrics(run);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].loss, 9.0);
}

TEST_F(TelemetryRowsTest, MetricsSpanSeveralChunksAndFollowModeReadsAcrossThem) {
    std::vector<StepEvent> steps;
    for (int64_t i = 0; i < 10000; ++i) steps.push_back(sampleStep(i));
    store.insertMetrics(run, steps); // more steps than one chunk holds
    RawDb raw(path);
    EXPECT_EQ(raw.integer("SELECT count(*) FROM metric_chunks WHERE run = " + std::to_string(run)), 3);
    const auto all = store.metrics(run);
    ASSERT_EQ(all.size(), 10000u);
    for (size_t i = 0; i < all.size(); ++i) expectSameStep(all[i], steps[i]);
    // After a step inside a chunk: only the later steps, across the chunk boundary.
    const auto tail = store.metrics(run, 4090);
    ASSERT_EQ(tail.size(), 10000u - 4091u);
    EXPECT_EQ(tail.front().step, 4091);
    EXPECT_EQ(tail.back().step, 9999);
    // Out-of-order batches are stored in order.
    store.insertMetrics(run, {sampleStep(10002), sampleStep(10001)});
    const auto last = store.metrics(run, 10000);
    ASSERT_EQ(last.size(), 2u);
    EXPECT_EQ(last[0].step, 10001);
    EXPECT_EQ(last[1].step, 10002);
}

TEST_F(TelemetryRowsTest, DamagedMetricsChunkIsAStoreErrorNamingTheFile) {
    store.insertMetric(run, sampleStep(0));
    {
        RawDb raw(path);
        raw.exec("UPDATE metric_chunks SET data = x'0100' WHERE run = " + std::to_string(run));
    }
    try {
        store.metrics(run);
        FAIL() << "a damaged chunk must not read as data";
    } catch (const StoreError& e) {
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("damaged"), std::string::npos) << e.what();
    }
}

TEST_F(TelemetryRowsTest, DeviceSamplesRoundTripEveryField) {
    DeviceEvent gpu;
    gpu.rank = 1;
    gpu.host = "node7";
    gpu.device = 3;
    gpu.util = 97.5;
    gpu.mem_used = 71.25e9;
    gpu.mem_total = 141e9;
    gpu.power_w = 612.5;
    gpu.temp_c = 66.5;
    gpu.sm_clock_mhz = 1980;
    gpu.t = 1700000001.5;
    DeviceEvent cpu; // a CPU run: no GPU fields
    cpu.rank = 0;
    cpu.host = "laptop";
    cpu.cpu_pct = 350.5;
    cpu.rss = 2.5e9;
    cpu.t = 1700000001.0;
    store.insertDeviceSample(run, gpu);
    store.insertDeviceSample(run, cpu);

    const auto all = store.deviceSamples(run);
    ASSERT_EQ(all.size(), 2u);
    const DeviceEvent& c = all[0]; // ordered by time
    EXPECT_EQ(c.rank, 0);
    EXPECT_EQ(c.host, "laptop");
    EXPECT_EQ(c.device, -1);
    EXPECT_EQ(c.util, -1);
    EXPECT_EQ(c.mem_used, -1);
    EXPECT_EQ(c.cpu_pct, 350.5);
    EXPECT_EQ(c.rss, 2.5e9);
    EXPECT_EQ(c.t, 1700000001.0);
    const DeviceEvent& g = all[1];
    EXPECT_EQ(g.rank, 1);
    EXPECT_EQ(g.host, "node7");
    EXPECT_EQ(g.device, 3);
    EXPECT_EQ(g.util, 97.5);
    EXPECT_EQ(g.mem_used, 71.25e9);
    EXPECT_EQ(g.mem_total, 141e9);
    EXPECT_EQ(g.power_w, 612.5);
    EXPECT_EQ(g.temp_c, 66.5);
    EXPECT_EQ(g.sm_clock_mhz, 1980);
    EXPECT_EQ(g.cpu_pct, -1);
    EXPECT_EQ(g.rss, -1);
    EXPECT_EQ(g.t, 1700000001.5);

    const auto since = store.deviceSamples(run, 1700000001.0);
    ASSERT_EQ(since.size(), 1u);
    EXPECT_EQ(since[0].rank, 1);
}

TEST_F(TelemetryRowsTest, SpansRoundTripAndStepsWithSpans) {
    auto span = [](int rank, int64_t step, int mb, const char* kind, double start) {
        SpanEvent s;
        s.rank = rank;
        s.stage = rank;
        s.step = step;
        s.microbatch = mb;
        s.kind = kind;
        s.start = start;
        s.end = start + 0.004;
        return s;
    };
    store.insertSpan(run, span(1, 10, 0, "F", 5.010));
    store.insertSpan(run, span(0, 10, 1, "F", 5.005));
    store.insertSpan(run, span(0, 10, 0, "F", 5.000));
    store.insertSpan(run, span(0, 10, 0, "B", 5.020));
    store.insertSpan(run, span(0, 20, 0, "optimizer", 9.000));
    store.insertSpan(run, span(0, 30, 0, "allreduce", 12.000));

    EXPECT_EQ(store.spanSteps(run), (std::vector<int64_t>{10, 20, 30}));
    EXPECT_TRUE(store.spanSteps(run + 1).empty());
    const auto s10 = store.spans(run, 10);
    ASSERT_EQ(s10.size(), 4u);
    // By rank, then start.
    EXPECT_EQ(s10[0].start, 5.000);
    EXPECT_EQ(s10[1].start, 5.005);
    EXPECT_EQ(s10[2].start, 5.020);
    EXPECT_EQ(s10[3].rank, 1);
    EXPECT_EQ(s10[2].kind, "B");
    EXPECT_EQ(s10[1].microbatch, 1);
    EXPECT_EQ(s10[3].stage, 1);
    EXPECT_EQ(s10[3].step, 10);
    EXPECT_EQ(s10[3].end, 5.010 + 0.004);
    EXPECT_EQ(store.spans(run, 20)[0].kind, "optimizer");
}

TEST_F(TelemetryRowsTest, SpansOfOneStepAndRankShareOneRow) {
    std::vector<SpanEvent> batch;
    for (int rank = 0; rank < 2; ++rank)
        for (int mb = 0; mb < 8; ++mb) {
            SpanEvent s;
            s.rank = rank;
            s.stage = rank;
            s.step = 4;
            s.microbatch = mb;
            s.kind = mb % 2 ? "recv_activation_with_a_long_kind_name" : "F";
            s.start = 100.0 + rank + mb * 0.01;
            s.end = s.start + 0.005;
            batch.push_back(s);
        }
    store.insertSpans(run, batch);
    RawDb raw(path);
    EXPECT_EQ(raw.integer("SELECT count(*) FROM span_chunks WHERE run = " + std::to_string(run)), 2);
    EXPECT_EQ(raw.integer("SELECT sum(spans) FROM span_chunks WHERE run = " + std::to_string(run)), 16);
    const auto got = store.spans(run, 4);
    ASSERT_EQ(got.size(), 16u);
    for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].rank, batch[i].rank);
        EXPECT_EQ(got[i].microbatch, batch[i].microbatch);
        EXPECT_EQ(got[i].kind, batch[i].kind);
        EXPECT_EQ(got[i].start, batch[i].start);
        EXPECT_EQ(got[i].end, batch[i].end);
    }
}

TEST_F(TelemetryRowsTest, DamagedSpansChunkIsAStoreErrorNamingTheFile) {
    SpanEvent s;
    s.step = 3;
    s.kind = "F";
    s.start = 1.0;
    s.end = 2.0;
    store.insertSpan(run, s);
    {
        RawDb raw(path);
        // A header and half a record.
        raw.exec("UPDATE span_chunks SET data = x'01000000000000' WHERE run = " + std::to_string(run));
    }
    try {
        store.spans(run, 3);
        FAIL() << "a damaged chunk must not read as data";
    } catch (const StoreError& e) {
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
    }
}

TEST_F(TelemetryRowsTest, CommsAndCheckpointsRoundTrip) {
    CommEvent c;
    c.rank = 2;
    c.collectives = 1234;
    c.bytes = int64_t{5} << 40;
    c.last_seq = 1233;
    c.t = 1700000002.25;
    store.insertComm(run, c);
    c.rank = 1;
    c.last_seq = 1200;
    store.insertComm(run, c);
    const auto comms = store.comms(run);
    ASSERT_EQ(comms.size(), 2u);
    EXPECT_EQ(comms[0].rank, 1);
    EXPECT_EQ(comms[0].last_seq, 1200);
    EXPECT_EQ(comms[1].rank, 2);
    EXPECT_EQ(comms[1].collectives, 1234);
    EXPECT_EQ(comms[1].bytes, int64_t{5} << 40);
    EXPECT_EQ(comms[1].last_seq, 1233);
    EXPECT_EQ(comms[1].t, 1700000002.25);

    CheckpointEvent k;
    k.step = 200;
    k.path = "/runs/3/checkpoints/step-200";
    k.bytes = 987654321;
    k.ms = 1234.5;
    k.layout = "dp2.tp1.pp1.z0";
    k.t = 1700000003.5;
    store.insertCheckpoint(run, k);
    k.step = 100;
    k.path = "/runs/3/checkpoints/step-100";
    store.insertCheckpoint(run, k);
    const auto ks = store.checkpoints(run);
    ASSERT_EQ(ks.size(), 2u);
    EXPECT_EQ(ks[0].step, 100);
    EXPECT_EQ(ks[1].step, 200);
    EXPECT_EQ(ks[1].path, "/runs/3/checkpoints/step-200");
    EXPECT_EQ(ks[1].bytes, 987654321);
    EXPECT_EQ(ks[1].ms, 1234.5);
    EXPECT_EQ(ks[1].layout, "dp2.tp1.pp1.z0");
    EXPECT_EQ(ks[1].t, 1700000003.5);
}

TEST_F(TelemetryRowsTest, DeleteRunRemovesAllItsRowsAndOnlyThose) {
    const int64_t keep = newRun("keep");
    NewRun childSpec;
    childSpec.name = "resumed";
    childSpec.parent_run = run;
    const int64_t child = store.createRun(childSpec);
    for (int64_t r : {run, keep}) {
        store.insertMetric(r, sampleStep(1));
        DeviceEvent d;
        d.t = 1;
        store.insertDeviceSample(r, d);
        SpanEvent s;
        s.kind = "F";
        store.insertSpan(r, s);
        store.insertComm(r, CommEvent{});
        CheckpointEvent k;
        k.path = "p";
        store.insertCheckpoint(r, k);
        LogRow l;
        l.message = r == run ? "zyzzyva appears only in the deleted run" : "kept line zyzzyva2";
        store.insertLog(r, l);
    }
    store.indexLogs(); // both runs' lines are in the full-text index
    store.deleteRun(run);

    EXPECT_FALSE(store.run(run));
    EXPECT_TRUE(store.metrics(run).empty());
    EXPECT_TRUE(store.deviceSamples(run).empty());
    EXPECT_TRUE(store.spanSteps(run).empty());
    EXPECT_TRUE(store.comms(run).empty());
    EXPECT_TRUE(store.checkpoints(run).empty());
    EXPECT_EQ(store.logCount(run), 0);

    RawDb raw(path);
    for (const char* table :
         {"metric_chunks", "device_samples", "span_chunks", "comms", "checkpoints", "logs"}) {
        EXPECT_EQ(raw.integer(std::string("SELECT count(*) FROM ") + table +
                              " WHERE run = " + std::to_string(run)),
                  0)
            << table;
        EXPECT_EQ(raw.integer(std::string("SELECT count(*) FROM ") + table +
                              " WHERE run = " + std::to_string(keep)),
                  1)
            << table;
    }
    // The full-text index forgot the deleted lines and still knows the others.
    RawDb index(store.logIndexPath());
    EXPECT_EQ(index.integer("SELECT count(*) FROM logs_fts WHERE logs_fts MATCH 'zyzzyva'"), 0);
    EXPECT_EQ(index.integer("SELECT count(*) FROM logs_fts WHERE logs_fts MATCH 'zyzzyva2'"), 1);
    EXPECT_EQ(index.integer("SELECT count(*) FROM indexed WHERE run = " + std::to_string(run)), 0);
    index.exec("INSERT INTO logs_fts(logs_fts) VALUES ('integrity-check')");
    LogQuery q;
    q.match = "zyzzyva2";
    EXPECT_EQ(store.logCount(keep, q), 1);
    // A resumed run outlives its parent, without the dangling link.
    ASSERT_TRUE(store.run(child));
    EXPECT_FALSE(store.run(child)->parent_run);
    EXPECT_EQ(store.metrics(keep).size(), 1u);
}

} // namespace
} // namespace parallax

// A long run's older device samples thinned in the store: one row per rank and device for each
// window, standing for the samples it replaced (their means, their largest memory), the ranks an
// alert named kept raw, newer samples untouched, and a pass going on where the last one ended; the
// run report reads the same means and counts from the thinned rows as from the raw ones.

#include "core/store/RunReport.h"
#include "core/store/RunStore.h"
#include "core/store/TelemetryThinning.h"
#include "tests/core/store/TempDir.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

namespace parallax {
namespace {

using test::TempDir;

const char* kSpec = "name = \"thin\"\n[model]\nkind = \"gpt\"\npreset = \"tiny\"\n";

class TelemetryThinning : public ::testing::Test {
protected:
    TempDir dir;
    RunStore store{dir.file("parallax.db")};
    int64_t run = 0;

    void SetUp() override {
        NewRun r;
        r.name = "thin";
        r.spec_toml = kSpec;
        run = store.createRun(r);
    }

    // Four ranks on two hosts sampled every 0.5 s from t = 1000 to 1119.5: utilization 10 x rank
    // plus a sawtooth, memory growing with t, power unknown on rank 3.
    void addSamples() {
        std::vector<DeviceEvent> rows;
        for (int i = 0; i < 240; ++i)
            for (int rank = 0; rank < 4; ++rank) {
                DeviceEvent d;
                d.rank = rank;
                d.host = rank < 2 ? "node0" : "node1";
                d.device = rank % 2;
                d.t = 1000.0 + 0.5 * i;
                d.util = 10.0 * rank + (i % 7);
                d.mem_used = 1e9 + 1e6 * i;
                d.mem_total = 80e9;
                d.power_w = rank == 3 ? -1 : 300.0 + i % 3;
                rows.push_back(d);
            }
        store.insertDeviceSamples(run, rows);
    }

    // Per rank: rows, samples they stand for, and sum of util x samples.
    struct Totals {
        int rows = 0, samples = 0;
        double utilSum = 0, memMax = 0;
    };
    std::map<int, Totals> totals(double from, double until) {
        std::map<int, Totals> out;
        for (const DeviceEvent& e : store.eventsBetween<DeviceEvent>(run, from, until)) {
            Totals& t = out[e.rank];
            ++t.rows;
            t.samples += e.samples;
            t.utilSum += e.util * e.samples;
            t.memMax = std::max(t.memMax, e.mem_used);
        }
        return out;
    }
};

TEST_F(TelemetryThinning, OlderWindowsBecomeOneRowPerRankAndKeptRanksStayRaw) {
    addSamples();
    const std::map<int, Totals> raw = totals(990, 1080);
    // Windows of 30 s aligned on multiples of 30: [990, 1020), [1020, 1050), [1050, 1080) are
    // older than 1090; [1080, 1110) is not.
    const ThinningPass pass = thinDeviceSamples(store, run, 1090.0, /*keepRanks=*/{2}, {30, 10});
    EXPECT_EQ(pass.windows, 3);
    EXPECT_EQ(pass.rowsBefore, 3 * 160);  // ranks 0, 1 and 3: 160 samples each before 1080
    EXPECT_EQ(pass.rowsAfter, 3 * 3);     // one row per rank and window
    const std::map<int, Totals> thinned = totals(990, 1080);
    for (int rank : {0, 1, 3}) {
        EXPECT_EQ(thinned.at(rank).rows, 3) << rank;
        EXPECT_EQ(thinned.at(rank).samples, raw.at(rank).samples) << rank;
        EXPECT_NEAR(thinned.at(rank).utilSum, raw.at(rank).utilSum, 1e-6) << rank;
        EXPECT_DOUBLE_EQ(thinned.at(rank).memMax, raw.at(rank).memMax) << rank;
    }
    EXPECT_EQ(thinned.at(2).rows, raw.at(2).rows); // named in an alert: raw
    EXPECT_EQ(thinned.at(2).rows, 160);
    // The newer samples are as they were.
    for (const auto& [rank, t] : totals(1080, 1200)) EXPECT_EQ(t.rows, 80) << rank;

    // A thinned row: the newest sample's time and host, the window's means and largest memory.
    const std::vector<DeviceEvent> first = store.eventsBetween<DeviceEvent>(run, 990, 1020);
    const auto rank0 = std::find_if(first.begin(), first.end(), [](const DeviceEvent& e) { return e.rank == 0; });
    ASSERT_NE(rank0, first.end());
    const DeviceEvent& r0 = *rank0;
    EXPECT_EQ(std::count_if(first.begin(), first.end(), [](const DeviceEvent& e) { return e.rank == 0; }), 1);
    EXPECT_EQ(r0.host, "node0");
    EXPECT_DOUBLE_EQ(r0.t, 1019.5);
    EXPECT_EQ(r0.samples, 40); // 1000 to 1019.5
    double util = 0;
    for (int i = 0; i < 40; ++i) util += i % 7;
    EXPECT_NEAR(r0.util, util / 40, 1e-9);
    EXPECT_DOUBLE_EQ(r0.mem_used, 1e9 + 1e6 * 39);
    // Rank 3 reported no power: its thinned rows say unknown, not a mean of -1s.
    for (const DeviceEvent& e : first)
        if (e.rank == 3) EXPECT_EQ(e.power_w, -1);
}

TEST_F(TelemetryThinning, APassGoesOnWhereTheLastEndedAndAtMostItsWindows) {
    addSamples();
    EXPECT_EQ(thinDeviceSamples(store, run, 1200.0, {}, {30, 2}).windows, 2);
    EXPECT_EQ(store.thinnedUntil(run, "device").value_or(0), 1050.0);
    EXPECT_EQ(thinDeviceSamples(store, run, 1200.0, {}, {30, 2}).windows, 2);
    EXPECT_EQ(store.thinnedUntil(run, "device").value_or(0), 1110.0);
    // The last window [1110, 1140) is not over yet at 1130.
    EXPECT_EQ(thinDeviceSamples(store, run, 1130.0, {}, {30, 2}).windows, 0);
    // Every sample is accounted for, once.
    int samples = 0;
    for (const auto& [rank, t] : totals(0, 2000)) samples += t.samples;
    EXPECT_EQ(samples, 240 * 4);
}

TEST_F(TelemetryThinning, TheReportReadsTheSameMeansFromThinnedRows) {
    addSamples();
    StepEvent step;
    for (int s = 0; s < 135; ++s) { // the steps cover every sample
        step.step = s;
        step.t = 1000.0 + s;
        step.step_ms = 1000;
        store.insertMetric(run, step);
    }
    const RunReport before = buildRunReport(store, run, 0);
    thinDeviceSamples(store, run, 1200.0, {}, {30, 100});
    const RunReport after = buildRunReport(store, run, 0);
    ASSERT_EQ(before.devices.size(), 4u);
    ASSERT_EQ(after.devices.size(), 4u);
    for (size_t i = 0; i < 4; ++i) {
        const RunReport::Device& b = before.devices[i];
        const RunReport::Device& a = after.devices[i];
        EXPECT_EQ(a.samples, b.samples) << i;
        EXPECT_NEAR(*a.utilMean, *b.utilMean, 1e-9) << i;
        EXPECT_DOUBLE_EQ(*a.memMax, *b.memMax) << i;
        EXPECT_EQ(a.powerMean.has_value(), b.powerMean.has_value()) << i;
    }
}

// Each rank's step times: windows of 20 steps all sent before the mark become one row per rank
// at the window's first step with the window's mean times; a window with a row sent after the mark,
// and the window of the newest step, stay; a named rank stays raw.
TEST_F(TelemetryThinning, RankStepsBecomeOneRowPerRankForEachWindowOfSteps) {
    std::vector<RankStepEvent> rows;
    for (int64_t step = 0; step < 70; ++step)
        for (int rank = 0; rank < 3; ++rank) {
            RankStepEvent e;
            e.rank = rank;
            e.step = step;
            e.compute_ms = 100.0 + rank + step % 4;
            e.wait_ms = 5.0 * rank;
            e.t = 1000.0 + step;
            rows.push_back(e);
        }
    store.insertEvents(run, rows);
    // Steps 0-19 and 20-39 were all sent before 1045; 40-59 was not (steps 45 on came later).
    const ThinningPass pass = thinRankSteps(store, run, 1045.0, /*keepRanks=*/{1}, 20, 10);
    EXPECT_EQ(pass.windows, 2);
    EXPECT_EQ(pass.rowsBefore, 2 * 20 * 2);
    EXPECT_EQ(pass.rowsAfter, 2 * 2);
    const std::vector<RankStepEvent> old = store.eventsBetween<RankStepEvent>(run, 0, 40);
    std::map<int, std::vector<RankStepEvent>> byRank;
    for (const RankStepEvent& e : old) byRank[e.rank].push_back(e);
    EXPECT_EQ(byRank[1].size(), 40u); // named: raw
    for (int rank : {0, 2}) {
        ASSERT_EQ(byRank[rank].size(), 2u) << rank;
        EXPECT_EQ(byRank[rank][0].step, 0);
        EXPECT_EQ(byRank[rank][1].step, 20);
        EXPECT_DOUBLE_EQ(byRank[rank][0].compute_ms, 100.0 + rank + 1.5); // step % 4 averages 1.5 over 20 steps
        EXPECT_DOUBLE_EQ(byRank[rank][0].wait_ms, 5.0 * rank);
    }
    EXPECT_EQ(store.eventsBetween<RankStepEvent>(run, 40, 70).size(), 30u * 3);
    // Later, everything old enough goes but the window of the newest step (60-69).
    EXPECT_EQ(thinRankSteps(store, run, 5000.0, {1}, 20, 10).windows, 1);
    EXPECT_EQ(store.eventsBetween<RankStepEvent>(run, 40, 60).size(), 2u + 20u);
    EXPECT_EQ(store.eventsBetween<RankStepEvent>(run, 60, 70).size(), 10u * 3);
}

} // namespace
} // namespace parallax

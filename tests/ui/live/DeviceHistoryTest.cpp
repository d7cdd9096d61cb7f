#include "ui/models/DeviceGridModel.h"
#include "ui/models/DeviceHistoryLoader.h"
#include "ui/models/StoreWatcher.h"
#include "ui/pages/LivePage.h"
#include "ui/plots/HeatMapPlot.h"

#include "tests/ui/live/LiveTestSupport.h"

#include <QPushButton>

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace parallax {
namespace {

using test::rankStep;
using test::TempStore;
using test::waitFor;

DeviceEvent gpuSample(int rank, double t) {
    DeviceEvent e;
    e.rank = rank;
    e.host = "node0";
    e.device = rank;
    e.util = 40 + 10 * rank;
    e.t = t;
    return e;
}

std::vector<RankStepEvent> stepsOf(int ranks, int64_t first, int64_t last) {
    std::vector<RankStepEvent> rows;
    for (int64_t s = first; s <= last; ++s)
        for (int r = 0; r < ranks; ++r) rows.push_back(rankStep(r, s, 60, 40));
    return rows;
}

TEST(DeviceHistoryTest, OlderRankStepsGoBeforeTheHeldOnesWithinTheBound) {
    DeviceGridModel model;
    model.addRankSteps(stepsOf(2, 1000, 1099), true);
    ASSERT_EQ(model.firstStep(), 1000);
    // The range before, overlapping what is held, and a rank that stopped before the window.
    std::vector<RankStepEvent> older = stepsOf(2, 0, 1099);
    for (int64_t s = 0; s < 10; ++s) older.push_back(rankStep(2, s, 10, 90));
    model.addOlderRankSteps(older);
    ASSERT_EQ(model.stepHistories().size(), 3u);
    const DeviceGridModel::StepHistory& r0 = model.stepHistories()[0];
    EXPECT_EQ(r0.rank, 0);
    EXPECT_EQ(r0.steps.size(), 1100u); // each step once
    EXPECT_EQ(r0.steps.front(), 0);
    EXPECT_EQ(r0.steps.back(), 1099);
    EXPECT_FLOAT_EQ(r0.computeShare.front(), 0.6f);
    EXPECT_EQ(model.stepHistories()[2].rank, 2);
    EXPECT_EQ(model.stepHistories()[2].steps.size(), 10u);
    EXPECT_EQ(model.firstStep(), 0);

    // However far back a view goes, a rank's history stays within its bound and spans it all.
    model.addOlderRankSteps(stepsOf(1, -20000, -1));
    const DeviceGridModel::StepHistory& deep = model.stepHistories()[0];
    EXPECT_LE(deep.steps.size(), DeviceGridModel::kMaxStepHistory);
    // Merged entries stand at their first step: the oldest stays, the last stands for the newest few.
    EXPECT_EQ(deep.steps.front(), -20000);
    EXPECT_GT(deep.steps.back(), 1090);
    EXPECT_TRUE(std::is_sorted(deep.steps.begin(), deep.steps.end()));
}

TEST(DeviceHistoryTest, OlderSamplesGoBeforeTheHeldOnesWithinTheBound) {
    const double t0 = 1.7e9;
    DeviceGridModel model;
    std::vector<DeviceEvent> window;
    for (int i = 100; i < 200; ++i) window.push_back(gpuSample(0, t0 + i));
    model.addSamples(window, true);
    std::vector<DeviceEvent> older;
    for (int i = 0; i < 200; ++i) older.push_back(gpuSample(0, t0 + i));
    older.push_back(gpuSample(1, t0 + 5)); // a rank that stopped sampling early
    model.addOlderSamples(older);
    ASSERT_EQ(model.histories().size(), 2u);
    EXPECT_EQ(model.histories()[0].t.size(), 200u);
    EXPECT_EQ(model.histories()[0].t.front(), t0);
    EXPECT_EQ(model.histories()[1].rank, 1);
    EXPECT_EQ(model.firstTime(), t0);
    EXPECT_EQ(model.lastTime(), t0 + 199);
    ASSERT_TRUE(model.latest(1).has_value()); // its cell shows its last sample
    EXPECT_EQ(model.latest(0)->t, t0 + 199);

    std::vector<DeviceEvent> deep;
    for (int i = 1; i <= 20000; ++i) deep.push_back(gpuSample(0, t0 - 20001 + i));
    model.addOlderSamples(deep);
    const DeviceGridModel::History& h = model.histories()[0];
    EXPECT_LE(h.t.size(), DeviceGridModel::kMaxTimeHistory);
    EXPECT_EQ(h.t.front(), t0 - 20000);
    EXPECT_GT(h.t.back(), t0 + 190);
}

// The Live page opens a long run at its last window; Earlier reads the windows before it, one a
// click, down to the run's beginning, into the heat map's model.
TEST(DeviceHistoryTest, EarlierOnTheLivePageReadsTheWindowsBeforeDownToTheRunsStart) {
    TempStore ts;
    const int64_t run = ts.newRun("an-hour", 2000, 2);
    ts.store.markRunning(run, 4242, "node0");
    const double t0 = ts.store.run(run)->created_at + 10;
    const int samples = 3600 / 5, steps = 1000;
    std::vector<DeviceEvent> rows;
    for (int i = 0; i < samples; ++i)
        for (int r = 0; r < 2; ++r) rows.push_back(gpuSample(r, t0 + 5.0 * i));
    ts.store.insertEvents(run, rows);
    ts.store.insertEvents(run, stepsOf(2, 0, steps - 1));

    StoreWatcher watcher(ts.qpath());
    watcher.setInterval(20);
    LivePage page(&watcher);
    page.resize(1200, 900);
    page.show();
    page.setRun(run);
    DeviceGridModel* model = page.deviceModel();
    auto* earlier = page.findChild<QPushButton*>(QStringLiteral("earlierHistory"));
    ASSERT_NE(earlier, nullptr);
    ASSERT_TRUE(waitFor([&] { return model->firstStep() == steps - StoreWatcher::kOpenRankSteps && earlier->isEnabled(); }));
    const double newest = rows.back().t;
    EXPECT_GE(model->firstTime(), newest - StoreWatcher::kOpenWindowSeconds);
    EXPECT_LT(model->histories()[0].t.size(), static_cast<size_t>(samples / 5));

    // One click: the window before, of both kinds.
    earlier->click();
    ASSERT_TRUE(waitFor([&] { return model->firstStep() == steps - 2 * StoreWatcher::kOpenRankSteps && earlier->isEnabled(); }));
    EXPECT_GE(model->firstTime(), newest - 2 * StoreWatcher::kOpenWindowSeconds - 5);
    EXPECT_LT(model->firstTime(), newest - StoreWatcher::kOpenWindowSeconds - 5);

    // Down to the run's beginning, where Earlier turns off.
    for (int clicks = 0; clicks < 20 && earlier->isEnabled(); ++clicks) {
        earlier->click();
        ASSERT_TRUE(waitFor([&] { return earlier->isEnabled() || (model->firstStep() == 0 && model->firstTime() == t0); }));
    }
    EXPECT_FALSE(earlier->isEnabled());
    EXPECT_EQ(model->firstStep(), 0);
    EXPECT_EQ(model->firstTime(), t0);
    // Every row once: the whole hour is held, within the bounds.
    EXPECT_EQ(model->histories()[0].t.size(), static_cast<size_t>(samples));
    EXPECT_EQ(model->stepHistories()[1].steps.size(), static_cast<size_t>(steps));
    page.heatMap()->rebuildNow();
    EXPECT_EQ(page.heatMap()->mode(), HeatMapPlot::Mode::Steps);
}

} // namespace
} // namespace parallax

#include "ui/models/StoreWatcher.h"

#include "tests/ui/live/LiveTestSupport.h"

#include <QTest>

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

namespace parallax {
namespace {

using test::rankStep;
using test::stepEvent;
using test::TempStore;
using test::waitFor;

constexpr int kRanks = 4;
constexpr double kT0 = 1.7e9;
constexpr double kSampleEvery = 5.0;           // seconds between a rank's samples
constexpr int kSamples = 2 * 3600 / 5;         // two hours of them a rank
constexpr int64_t kSteps = 2000;

DeviceEvent gpuSample(int rank, double t) {
    DeviceEvent e;
    e.rank = rank;
    e.host = "node0";
    e.device = rank;
    e.util = 50 + rank;
    e.t = t;
    return e;
}

// A run of two hours: every rank sampled every 5 s, and 2,000 steps of each rank.
struct LongRun {
    TempStore ts;
    int64_t run = 0;
    std::vector<DeviceEvent> samples;  // as the store orders them: by time, rank
    std::vector<RankStepEvent> steps;  // by step, rank

    LongRun() {
        run = ts.newRun("two-hours", kSteps * 2, kRanks);
        ts.store.markRunning(run, 4242, "node0");
        for (int i = 0; i < kSamples; ++i)
            for (int r = 0; r < kRanks; ++r) samples.push_back(gpuSample(r, kT0 + i * kSampleEvery));
        for (int64_t s = 0; s < kSteps; ++s)
            for (int r = 0; r < kRanks; ++r) steps.push_back(rankStep(r, s, 80, 20));
        std::vector<StepEvent> metrics;
        for (int64_t s = 0; s < kSteps; ++s) metrics.push_back(stepEvent(s, 2.0, kT0 + static_cast<double>(s)));
        ts.store.insertEvents(run, samples);
        ts.store.insertEvents(run, steps);
        ts.store.insertMetrics(run, metrics);
    }

    double newestT() const { return samples.back().t; }
    std::vector<DeviceEvent> samplesIn(double from, double until) const {
        std::vector<DeviceEvent> out;
        for (const DeviceEvent& e : samples)
            if (e.t >= from && e.t < until) out.push_back(e);
        return out;
    }
    std::vector<RankStepEvent> stepsIn(int64_t from, int64_t until) const {
        std::vector<RankStepEvent> out;
        for (const RankStepEvent& e : steps)
            if (e.step >= from && e.step < until) out.push_back(e);
        return out;
    }
};

// What a view keeps of the watcher's signals for one run.
struct Seen {
    std::vector<DeviceEvent> devices;
    std::vector<RankStepEvent> rankSteps;
    std::vector<StepEvent> metrics;
    int deviceResets = 0, rankStepResets = 0;
    std::vector<DeviceEvent> olderDevices;
    std::vector<RankStepEvent> olderSteps;
    std::pair<double, double> olderDeviceRange{0, 0};
    std::pair<qint64, qint64> olderStepRange{0, 0};
    int olderAnswers = 0;

    void attach(StoreWatcher& w, int64_t run) {
        QObject::connect(&w, &StoreWatcher::deviceSamplesAdded,
                         [this, run](qint64 r, const std::vector<DeviceEvent>& rows, bool reset) {
                             if (r != run) return;
                             if (reset) {
                                 devices.clear();
                                 ++deviceResets;
                             }
                             devices.insert(devices.end(), rows.begin(), rows.end());
                         });
        QObject::connect(&w, &StoreWatcher::rankStepsAdded,
                         [this, run](qint64 r, const std::vector<RankStepEvent>& rows, bool reset) {
                             if (r != run) return;
                             if (reset) {
                                 rankSteps.clear();
                                 ++rankStepResets;
                             }
                             rankSteps.insert(rankSteps.end(), rows.begin(), rows.end());
                         });
        QObject::connect(&w, &StoreWatcher::metricsAdded, [this, run](qint64 r, const std::vector<StepEvent>& rows, bool reset) {
            if (r != run) return;
            if (reset) metrics.clear();
            metrics.insert(metrics.end(), rows.begin(), rows.end());
        });
        QObject::connect(&w, &StoreWatcher::deviceSamplesLoaded,
                         [this, run](qint64 r, double from, double until, const std::vector<DeviceEvent>& rows) {
                             if (r != run) return;
                             olderDevices = rows;
                             olderDeviceRange = {from, until};
                             ++olderAnswers;
                         });
        QObject::connect(&w, &StoreWatcher::rankStepsLoaded,
                         [this, run](qint64 r, qint64 from, qint64 until, const std::vector<RankStepEvent>& rows) {
                             if (r != run) return;
                             olderSteps = rows;
                             olderStepRange = {from, until};
                             ++olderAnswers;
                         });
    }
};

std::vector<std::pair<int, double>> keys(const std::vector<DeviceEvent>& rows) {
    std::vector<std::pair<int, double>> out;
    for (const DeviceEvent& e : rows) out.emplace_back(e.rank, e.t);
    return out;
}

std::vector<std::pair<int, int64_t>> keys(const std::vector<RankStepEvent>& rows) {
    std::vector<std::pair<int, int64_t>> out;
    for (const RankStepEvent& e : rows) out.emplace_back(e.rank, e.step);
    return out;
}

TEST(StoreWatcherWindowTest, TheStoreFindsTheNewestKeyAndReadsARange) {
    LongRun long_;
    RunStore& store = long_.ts.store;
    EXPECT_EQ(store.lastEventKey<DeviceEvent>(long_.run), long_.newestT());
    EXPECT_EQ(store.lastEventKey<RankStepEvent>(long_.run), static_cast<double>(kSteps - 1));
    const int64_t empty = long_.ts.newRun("empty");
    EXPECT_FALSE(store.lastEventKey<DeviceEvent>(empty).has_value());
    // [from, until): the first bound in, the second out.
    const double from = kT0 + 100 * kSampleEvery, until = kT0 + 110 * kSampleEvery;
    EXPECT_EQ(keys(store.eventsBetween<DeviceEvent>(long_.run, from, until)), keys(long_.samplesIn(from, until)));
    EXPECT_EQ(keys(store.eventsBetween<RankStepEvent>(long_.run, int64_t{10}, int64_t{13})), keys(long_.stepsIn(10, 13)));
}

TEST(StoreWatcherWindowTest, OpensALongRunAtItsLastWindowAndReadsOlderRowsOnRequest) {
    LongRun long_;
    StoreWatcher watcher(long_.ts.qpath());
    watcher.setInterval(20);
    Seen seen;
    seen.attach(watcher, long_.run);
    watcher.watch(long_.run);
    ASSERT_TRUE(waitFor([&] { return seen.deviceResets == 1 && seen.rankStepResets == 1 && !seen.metrics.empty(); }));

    // Device samples: the last kOpenWindowSeconds before the newest, of two hours written.
    const double windowStart = long_.newestT() - StoreWatcher::kOpenWindowSeconds;
    const std::vector<DeviceEvent> window = long_.samplesIn(windowStart, long_.newestT() + 1);
    EXPECT_EQ(keys(seen.devices), keys(window));
    ASSERT_FALSE(seen.devices.empty());
    EXPECT_EQ(seen.devices.front().t, windowStart); // a sample falls on the bound: it is in
    EXPECT_LT(seen.devices.size(), long_.samples.size() / 10);
    // Rank steps: each rank's last kOpenRankSteps steps.
    const int64_t firstStep = kSteps - StoreWatcher::kOpenRankSteps;
    EXPECT_EQ(keys(seen.rankSteps), keys(long_.stepsIn(firstStep, kSteps)));
    EXPECT_EQ(seen.rankSteps.size(), static_cast<size_t>(StoreWatcher::kOpenRankSteps * kRanks));
    // Metrics, a row a step, whole.
    EXPECT_EQ(seen.metrics.size(), static_cast<size_t>(kSteps));

    // The window before the one shown, as a view scrolling back asks for it: exactly those rows.
    const double oldestT = seen.devices.front().t;
    watcher.loadDeviceSamples(long_.run, oldestT - StoreWatcher::kOpenWindowSeconds, oldestT);
    ASSERT_TRUE(waitFor([&] { return seen.olderAnswers == 1; }));
    EXPECT_EQ(seen.olderDeviceRange, std::make_pair(oldestT - StoreWatcher::kOpenWindowSeconds, oldestT));
    EXPECT_EQ(keys(seen.olderDevices), keys(long_.samplesIn(oldestT - StoreWatcher::kOpenWindowSeconds, oldestT)));
    // Everything before the window: with the window, every row written, each once.
    watcher.loadDeviceSamples(long_.run, 0, oldestT);
    const int64_t oldestStep = seen.rankSteps.front().step;
    watcher.loadRankSteps(long_.run, 0, oldestStep);
    ASSERT_TRUE(waitFor([&] { return seen.olderAnswers == 3; }));
    std::vector<DeviceEvent> all = seen.olderDevices;
    all.insert(all.end(), seen.devices.begin(), seen.devices.end());
    EXPECT_EQ(keys(all), keys(long_.samples));
    EXPECT_EQ(seen.olderStepRange, std::make_pair(qint64{0}, qint64{oldestStep}));
    std::vector<RankStepEvent> allSteps = seen.olderSteps;
    allSteps.insert(allSteps.end(), seen.rankSteps.begin(), seen.rankSteps.end());
    EXPECT_EQ(keys(allSteps), keys(long_.steps));
    // The older rows went to their own signal: the live ones are as they were.
    EXPECT_EQ(keys(seen.devices), keys(window));

    // Rows written after the open arrive once each, after the window, without another reset.
    std::vector<DeviceEvent> later;
    std::vector<RankStepEvent> laterSteps;
    for (int i = 1; i <= 3; ++i)
        for (int r = 0; r < kRanks; ++r) later.push_back(gpuSample(r, long_.newestT() + i * kSampleEvery));
    for (int64_t s = kSteps; s < kSteps + 3; ++s)
        for (int r = 0; r < kRanks; ++r) laterSteps.push_back(rankStep(r, s, 70, 30));
    long_.ts.store.insertEvents(long_.run, later);
    long_.ts.store.insertEvents(long_.run, laterSteps);
    const size_t devicesAfter = window.size() + later.size();
    const size_t stepsAfter = seen.rankSteps.size() + laterSteps.size();
    ASSERT_TRUE(waitFor([&] { return seen.devices.size() >= devicesAfter && seen.rankSteps.size() >= stepsAfter; }));
    QTest::qWait(120); // a few more polls: nothing is sent twice
    std::vector<DeviceEvent> expected = window;
    expected.insert(expected.end(), later.begin(), later.end());
    EXPECT_EQ(keys(seen.devices), keys(expected));
    EXPECT_EQ(seen.rankSteps.size(), stepsAfter);
    EXPECT_EQ(keys(std::vector<RankStepEvent>(seen.rankSteps.end() - static_cast<std::ptrdiff_t>(laterSteps.size()),
                                              seen.rankSteps.end())),
              keys(laterSteps));
    EXPECT_EQ(seen.deviceResets, 1);
    EXPECT_EQ(seen.rankStepResets, 1);
}

SpanEvent stepSpan(int rank, int64_t step) {
    SpanEvent s;
    s.rank = rank;
    s.step = step;
    s.kind = "F";
    s.start = static_cast<double>(step);
    s.end = s.start + 0.5;
    return s;
}

// Spans are read for a listener only, and on opening a run only those of its newest steps.
TEST(StoreWatcherWindowTest, SpansAreReadForAListenerFromTheNewestSteps) {
    TempStore ts;
    const int64_t run = ts.newRun("spans", 100, 2);
    std::vector<SpanEvent> spans;
    for (int64_t step = 0; step < 30; ++step)
        for (int r = 0; r < 2; ++r) spans.push_back(stepSpan(r, step));
    ts.store.insertSpans(run, spans);
    ts.store.finishRun(run, RunState::Succeeded, 0, "done"); // every step's spans are complete

    StoreWatcher watcher(ts.qpath());
    watcher.setInterval(20);
    int metricResets = 0;
    QObject::connect(&watcher, &StoreWatcher::metricsAdded, [&](qint64 r, const std::vector<StepEvent>&, bool reset) {
        if (r == run && reset) ++metricResets;
    });
    watcher.watch(run);
    ASSERT_TRUE(waitFor([&] { return metricResets == 1; }));

    // A view that starts listening gets the newest kOpenSpanSteps steps' spans, as a reset.
    std::vector<SpanEvent> got;
    int resets = 0;
    QObject::connect(&watcher, &StoreWatcher::spansAdded, [&](qint64 r, const std::vector<SpanEvent>& rows, bool reset) {
        if (r != run) return;
        if (reset) {
            got.clear();
            ++resets;
        }
        got.insert(got.end(), rows.begin(), rows.end());
    });
    watcher.pollNow();
    ASSERT_TRUE(waitFor([&] { return resets == 1; }));
    const int64_t first = 30 - static_cast<int64_t>(StoreWatcher::kOpenSpanSteps);
    ASSERT_EQ(got.size(), StoreWatcher::kOpenSpanSteps * 2);
    EXPECT_EQ(got.front().step, first);
    EXPECT_EQ(got.back().step, 29);

    // Later steps follow once.
    ts.store.insertSpans(run, {stepSpan(0, 30), stepSpan(1, 30)});
    ASSERT_TRUE(waitFor([&] { return got.size() == StoreWatcher::kOpenSpanSteps * 2 + 2; }));
    QTest::qWait(100);
    EXPECT_EQ(got.size(), StoreWatcher::kOpenSpanSteps * 2 + 2);
    EXPECT_EQ(resets, 1);
}

} // namespace
} // namespace parallax

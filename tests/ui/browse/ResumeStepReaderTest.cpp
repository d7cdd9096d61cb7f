#include "BrowseTestSupport.h"

#include "ui/models/ResumeStepReader.h"
#include "ui/models/RunListModel.h"
#include "ui/models/StoreWatcher.h"

#include <QSignalSpy>

#include <gtest/gtest.h>

using namespace parallax;
using namespace parallax::test;

namespace {

// A resume of `parent` that started at `startStep`; with a step row when `stepped`.
int64_t addResume(CraftedStore& store, int64_t parent, int64_t startStep, bool stepped) {
    NewRun n;
    n.name = "resumed";
    n.steps_total = 20;
    n.world_size = 2;
    n.parent_run = parent;
    const int64_t id = store.store.createRun(n);
    store.store.markRunning(id, 4242, "testhost");
    RunStartEvent start;
    start.world = 2;
    start.start_step = startStep;
    store.store.setRunStart(id, start);
    if (stepped) {
        StepEvent step;
        step.step = startStep;
        step.loss = 1.0;
        store.store.insertMetric(id, step);
        store.store.updateSummary(id, step);
    }
    return id;
}

} // namespace

TEST(ResumeStepReader, GivesTheListTheStepEachResumedRunStartedFrom) {
    CraftedStore store;
    const int64_t parent = store.addRun(tinySpec("parent"), RunState::Failed, 12);
    const int64_t resumed = addResume(store, parent, 12, true);
    // Not stepped yet: its run_start may not be in, so it is not read yet.
    const int64_t starting = addResume(store, parent, 7, false);
    RunListModel runs;
    runs.setRuns(store.store.listRuns());
    StoreWatcher watcher(store.qpath());
    ResumeStepReader reader(&runs, &watcher);
    QSignalSpy read(&reader, &ResumeStepReader::stepsRead);
    ASSERT_TRUE(waitFor([&] { return runs.hasResumeStep(resumed); }));
    EXPECT_EQ(read.count(), 1);
    EXPECT_EQ(read.first().at(0).toInt(), 1);
    EXPECT_FALSE(runs.hasResumeStep(parent));
    EXPECT_FALSE(runs.hasResumeStep(starting));
    const int row = runs.rowOfRun(resumed);
    EXPECT_EQ(runs.resumedFromText(runs.record(row)), QStringLiteral("resumed from #%1 at step 12").arg(parent));

    // Its first step is recorded: the list's row changes and it is read then.
    StepEvent step;
    step.step = 7;
    store.store.insertMetric(starting, step);
    store.store.updateSummary(starting, step);
    runs.setRuns(store.store.listRuns());
    ASSERT_TRUE(waitFor([&] { return runs.hasResumeStep(starting); }));
    EXPECT_EQ(runs.resumedFromText(runs.record(runs.rowOfRun(starting))),
              QStringLiteral("resumed from #%1 at step 7").arg(parent));
    EXPECT_FALSE(reader.isReading());
    EXPECT_EQ(read.count(), 2);
}

TEST(ResumeStepReader, ARunThatEndedBeforeItsRunStartIsReadAsNotKnown) {
    CraftedStore store;
    const int64_t parent = store.addRun(tinySpec("parent"), RunState::Failed, 4);
    NewRun n;
    n.name = "died-early";
    n.parent_run = parent;
    const int64_t early = store.store.createRun(n);
    store.store.markRunning(early, 4243, "testhost");
    store.store.finishRun(early, RunState::Failed, 1, "mpirun could not start");
    EXPECT_EQ(ResumeStepReader::read(store.store, {early}), (std::map<int64_t, int64_t>{{early, 0}}));

    RunListModel runs;
    runs.setRuns(store.store.listRuns());
    StoreWatcher watcher(store.qpath());
    ResumeStepReader reader(&runs, &watcher);
    ASSERT_TRUE(waitFor([&] { return runs.hasResumeStep(early); }));
    EXPECT_FALSE(runs.hasResumeStep(parent));
}

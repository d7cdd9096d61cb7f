#include "BrowseTestSupport.h"
#include "RunsPageHarness.h"

#include "ui/models/RunDetail.h"
#include "ui/models/RunListModel.h"
#include "ui/models/RunStoreThread.h"
#include "ui/models/StoreWatcher.h"
#include "ui/pages/RunDetailPane.h"
#include "ui/pages/RunsPage.h"

#include <QApplication>
#include <QClipboard>
#include <QLabel>
#include <QPushButton>
#include <QTableView>
#include <QTableWidget>

#include <gtest/gtest.h>

using namespace parallax;
using namespace parallax::test;

namespace {

// The Runs page over a store with a run that failed with its reason and exit code, a folder and
// a launch command, and a run that succeeded.
struct Fixture : RunsPageHarness {
    int64_t failed = 0, succeeded = 0;

    Fixture() {
        succeeded = store.addRun(tinySpec("gpt-baseline"), RunState::Succeeded, 10, 4.0, 1.7e9, {"baseline"});
        failed = store.addRun(tinySpec("gpt-text-lr3e3"), RunState::Running, 12);
        store.store.setRunDir(failed, "/data/runs/gpt-text-lr3e3-2");
        store.store.setLaunchCommand(failed, "parallax-cli run /data/specs/gpt-text.toml --set train.lr=3e-3");
        store.store.setNotes(failed, "lr too high");
        store.store.setStartedAt(failed, 1.7e9);
        store.store.finishRun(failed, RunState::Failed, 137, "rank 3 killed by signal 9", 1.7e9 + 600);
        open(2, 1200, 800);
    }
    RunDetailPane* pane() const { return page->detailPane(); }
    // Polls the store and waits until the list has run `id`.
    bool waitForRun(int64_t id) {
        watcher->pollNow();
        return waitFor([&] { return runs.rowOfRun(id) >= 0; });
    }
};

QStringList buttonTexts(const QList<QPushButton*>& buttons) {
    QStringList texts;
    for (const QPushButton* b : buttons) texts << b->text();
    return texts;
}

QStringList column(const QTableWidget* table, int c) {
    QStringList cells;
    for (int row = 0; row < table->rowCount(); ++row) cells << table->item(row, c)->text();
    return cells;
}

CheckpointEvent checkpoint(int64_t step, const std::string& path, double t) {
    CheckpointEvent c;
    c.step = step;
    c.path = path;
    c.bytes = 3 * 1024 * 1024;
    c.ms = 120;
    c.layout = "dp2 tp1 pp1 zero0";
    c.t = t;
    return c;
}

} // namespace

TEST(RunDetailPane, SaysWhatToDoWithNothingSelected) {
    Fixture f;
    EXPECT_EQ(f.page->currentRun(), 0);
    EXPECT_FALSE(f.pane()->hintLabel()->isHidden());
    EXPECT_EQ(f.pane()->hintLabel()->text(), RunDetail::hint());
    EXPECT_EQ(f.pane()->run(), 0);

    f.page->selectRun(f.succeeded);
    EXPECT_TRUE(f.pane()->hintLabel()->isHidden());
    EXPECT_EQ(f.pane()->run(), f.succeeded);

    f.page->view()->clearSelection();
    EXPECT_FALSE(f.pane()->hintLabel()->isHidden());
    EXPECT_EQ(f.pane()->run(), 0);
}

TEST(RunDetailPane, AFailedRunShowsItsReasonExitCodeFolderAndCommand) {
    Fixture f;
    f.page->selectRun(f.failed);
    RunDetailPane* pane = f.pane();
    EXPECT_EQ(pane->titleLabel()->text(), QStringLiteral("Run #%1 gpt-text-lr3e3").arg(f.failed));
    EXPECT_EQ(pane->stateLabel()->text(), QStringLiteral("failed"));
    EXPECT_EQ(pane->reasonLabel()->text(), QStringLiteral("rank 3 killed by signal 9 (exit code 137)"));
    EXPECT_FALSE(pane->reasonLabel()->isHidden());
    EXPECT_EQ(pane->runDirLabel()->text(), QStringLiteral("/data/runs/gpt-text-lr3e3-2"));
    EXPECT_TRUE(pane->runDirLabel()->textInteractionFlags() & Qt::TextSelectableByMouse);
    EXPECT_EQ(pane->commandLabel()->text(),
              QStringLiteral("parallax-cli run /data/specs/gpt-text.toml --set train.lr=3e-3"));
    EXPECT_TRUE(pane->commandLabel()->textInteractionFlags() & Qt::TextSelectableByMouse);
    EXPECT_EQ(pane->notesLabel()->text(), QStringLiteral("lr too high"));
    EXPECT_EQ(pane->detail().started, RunDetail::timeText(1.7e9));
    EXPECT_EQ(pane->detail().ended, RunDetail::timeText(1.7e9 + 600));
    EXPECT_EQ(pane->detail().duration, RunListModel::formatDuration(600));

    // A run that succeeded has no reason to give; its tags are shown.
    f.page->selectRun(f.succeeded);
    EXPECT_EQ(pane->stateLabel()->text(), QStringLiteral("succeeded"));
    EXPECT_TRUE(pane->reasonLabel()->isHidden());
    EXPECT_EQ(pane->tagsLabel()->text(), QStringLiteral("baseline"));
    EXPECT_EQ(pane->commandLabel()->text(), QStringLiteral("not recorded"));
    EXPECT_FALSE(pane->copyCommandButton()->isEnabled());
}

TEST(RunDetailPane, CopyPutsTheLaunchCommandOnTheClipboard) {
    Fixture f;
    QApplication::clipboard()->clear();
    f.page->selectRun(f.failed);
    QPushButton* copy = f.pane()->copyCommandButton();
    ASSERT_TRUE(copy->isEnabled());
    copy->click();
    EXPECT_EQ(QApplication::clipboard()->text(),
              QStringLiteral("parallax-cli run /data/specs/gpt-text.toml --set train.lr=3e-3"));
}

// The run it continues and the runs that continue it, both ways; a click selects that run.
TEST(RunDetailPane, ShowsTheLineageBothWaysAndAClickSelectsTheRun) {
    Fixture f;
    const int64_t next = f.store.addContinuation(tinySpec("gpt-text-lr3e3"), f.failed, 12, RunState::Running, 3);
    ASSERT_TRUE(f.waitForRun(next));
    f.page->selectRun(f.failed);
    RunDetailPane* pane = f.pane();
    EXPECT_EQ(buttonTexts(pane->lineageButtons()),
              QStringList{QStringLiteral("continued by #%1 gpt-text-lr3e3 (running)").arg(next)});

    pane->lineageButtons().first()->click();
    EXPECT_EQ(f.page->currentRun(), next);
    EXPECT_EQ(pane->run(), next);
    EXPECT_EQ(buttonTexts(pane->lineageButtons()),
              QStringList{QStringLiteral("continues #%1 gpt-text-lr3e3 (failed)").arg(f.failed)});

    // The run clicked is selected even where the filter hid it.
    f.page->setStateFilter(QStringLiteral("running"));
    f.page->selectRun(next);
    pane->lineageButtons().first()->click();
    EXPECT_EQ(f.page->currentRun(), f.failed);
    EXPECT_EQ(f.page->selectedRuns(), QList<qint64>{f.failed});
    EXPECT_EQ(pane->detail().continuedBy.size(), 1u);
}

TEST(RunDetailPane, ListsTheCheckpointsNewestFirst) {
    Fixture f;
    f.store.store.insertCheckpoint(f.failed, checkpoint(5, "/data/runs/gpt-text-lr3e3-2/checkpoints/step-5", 1.7e9 + 100));
    f.store.store.insertCheckpoint(f.failed, checkpoint(11, "/data/runs/gpt-text-lr3e3-2/checkpoints/step-11", 1.7e9 + 500));
    f.store.store.insertCheckpoint(f.failed, checkpoint(8, "/data/runs/gpt-text-lr3e3-2/checkpoints/step-8", 1.7e9 + 300));
    RunDetailPane* pane = f.pane();
    QTableWidget* table = pane->checkpointsView();

    // A run without checkpoints says so.
    f.page->selectRun(f.succeeded);
    ASSERT_TRUE(waitFor([&] { return !pane->isReading() && pane->checkpointsStatus()->text() == RunDetail::noCheckpoints(); }));
    EXPECT_FALSE(pane->checkpointsStatus()->isHidden());
    EXPECT_EQ(table->rowCount(), 0);

    f.page->selectRun(f.failed);
    ASSERT_TRUE(waitFor([&] { return table->rowCount() == 3; }));
    EXPECT_EQ(column(table, 0), (QStringList{"11", "8", "5"}));
    EXPECT_EQ(column(table, 1), (QStringList{RunDetail::timeText(1.7e9 + 500), RunDetail::timeText(1.7e9 + 300),
                                             RunDetail::timeText(1.7e9 + 100)}));
    EXPECT_EQ(column(table, 2), (QStringList{"3.0 MiB", "3.0 MiB", "3.0 MiB"}));
    EXPECT_EQ(column(table, 3).first(), QStringLiteral("dp2 tp1 pp1 zero0"));
    EXPECT_EQ(column(table, 4).first(), QStringLiteral("/data/runs/gpt-text-lr3e3-2/checkpoints/step-11"));
    EXPECT_TRUE(pane->checkpointsStatus()->isHidden());
}

// A run going is read again as it trains: a checkpoint written with a later step shows up.
TEST(RunDetailPane, ShowsACheckpointWrittenWhileTheRunGoes) {
    Fixture f;
    const int64_t going = f.store.addRun(tinySpec("gpt-going"), RunState::Running, 3);
    ASSERT_TRUE(f.waitForRun(going));
    f.page->selectRun(going);
    RunDetailPane* pane = f.pane();
    ASSERT_TRUE(waitFor([&] { return !pane->isReading() && pane->checkpointsStatus()->text() == RunDetail::noCheckpoints(); }));

    f.store.store.insertCheckpoint(going, checkpoint(3, "/data/runs/gpt-going/checkpoints/step-3", 1.7e9 + 4));
    StepEvent step;
    step.step = 4;
    step.loss = 1.0;
    step.t = 1.7e9 + 5;
    f.store.store.insertMetric(going, step);
    f.store.store.updateSummary(going, step);
    f.watcher->pollNow();
    ASSERT_TRUE(waitFor([&] { return pane->checkpointsView()->rowCount() == 1; }));
    EXPECT_EQ(column(pane->checkpointsView(), 0), QStringList{"3"});
    EXPECT_EQ(pane->run(), going);
}

// What the pane says, decided without widgets.
TEST(RunDetail, SaysWhyARunEndedAndOrdersCheckpoints) {
    RunListModel runs;
    RunRecord parent;
    parent.id = 3;
    parent.name = "gpt";
    parent.state = RunState::Lost;
    parent.started_at = 1000;
    parent.ended_at = 1125;
    RunRecord child = parent;
    child.id = 4;
    child.state = RunState::Stopped;
    child.parent_run = 3;
    child.exit_code = 143;
    child.ended_at = 0;
    runs.setRuns({child, parent});
    runs.setNow(1060);

    const RunDetail lost = RunDetail::of(runs, 3);
    EXPECT_EQ(lost.reason, QStringLiteral("no reason recorded"));
    EXPECT_EQ(lost.duration, RunListModel::formatDuration(125));
    ASSERT_EQ(lost.continuedBy.size(), 1u);
    EXPECT_EQ(lost.continuedBy[0].run, 4);
    EXPECT_EQ(lost.continuedBy[0].text, QStringLiteral("#4 gpt (stopped)"));

    const RunDetail stopped = RunDetail::of(runs, 4);
    EXPECT_EQ(stopped.reason, QStringLiteral("exit code 143"));
    EXPECT_EQ(stopped.ended, QStringLiteral("still going"));
    EXPECT_EQ(stopped.duration, RunListModel::formatDuration(60));
    ASSERT_TRUE(stopped.continues);
    EXPECT_EQ(stopped.continues->text, QStringLiteral("#3 gpt (lost)"));

    EXPECT_EQ(RunDetail::of(runs, 99).run, 0);

    const std::vector<RunDetail::Checkpoint> rows =
        RunDetail::checkpointRows({checkpoint(20, "b", 2), checkpoint(30, "c", 3), checkpoint(10, "a", 1)});
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows[0].step, 30);
    EXPECT_EQ(rows[1].step, 20);
    EXPECT_EQ(rows[2].step, 10);
    EXPECT_EQ(rows[0].path, QStringLiteral("c"));
}

#include "BrowseTestSupport.h"

#include "ui/models/RunCheckModel.h"
#include "ui/models/RunFilterModel.h"
#include "ui/models/RunListModel.h"
#include "ui/models/RunStoreThread.h"

#include <QAbstractItemModelTester>
#include <QSignalSpy>

#include <gtest/gtest.h>

using namespace parallax;
using namespace parallax::test;

namespace {

RunRecord record(int64_t id, const std::string& name, RunState state = RunState::Succeeded) {
    RunRecord r;
    r.id = id;
    r.name = name;
    r.state = state;
    r.model_kind = "gpt";
    r.layout = "dp2 tp1 pp1 zero0";
    r.steps_total = 100;
    r.last_step = 99;
    r.last_loss = 1.0 + double(id) / 100.0;
    r.tokens_per_s = 1000.0 * double(id);
    r.created_at = 1.7e9 + double(id);
    r.started_at = 1.7e9 + double(id);
    r.ended_at = state == RunState::Running ? 0 : r.started_at + 60.0 * double(id);
    return r;
}

std::vector<int64_t> idsOf(const QAbstractItemModel& m) {
    std::vector<int64_t> out;
    for (int row = 0; row < m.rowCount(); ++row) out.push_back(m.index(row, 0).data(RunListModel::RunIdRole).toLongLong());
    return out;
}

} // namespace

TEST(RunListModel, PassesTheModelTesterThroughMergesAndEdits) {
    CraftedStore store;
    RunStoreThread writer(store.qpath());
    RunListModel model;
    model.setWriter(&writer);
    RunFilterModel filter;
    filter.setSourceModel(&model);
    RunCheckModel check;
    check.setSourceModel(&filter);
    QAbstractItemModelTester t1(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
    QAbstractItemModelTester t2(&filter, QAbstractItemModelTester::FailureReportingMode::Fatal);
    QAbstractItemModelTester t3(&check, QAbstractItemModelTester::FailureReportingMode::Fatal);

    model.setRuns({record(1, "a"), record(2, "b"), record(3, "c", RunState::Running)});
    filter.sort(RunListModel::LossColumn, Qt::AscendingOrder);
    model.setRuns({record(1, "a"), record(3, "c", RunState::Succeeded), record(4, "d")}); // 2 gone, 4 new
    filter.setFilterText(QStringLiteral("d"));
    filter.setFilterText({});
    filter.setStates({QStringLiteral("succeeded")});
    check.setData(check.index(0, 0), Qt::Checked, Qt::CheckStateRole);
    model.setRuns({});
    model.setRuns({record(7, "x")});
    filter.setStates({});
    EXPECT_EQ(idsOf(model), (std::vector<int64_t>{7}));
}

TEST(RunListModel, MergesSnapshotsRowByRow) {
    RunListModel model;
    model.setRuns({record(1, "a"), record(2, "b"), record(3, "c", RunState::Running)});
    EXPECT_EQ(idsOf(model), (std::vector<int64_t>{3, 2, 1}));

    QSignalSpy resets(&model, &QAbstractItemModel::modelReset);
    QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
    QSignalSpy removed(&model, &QAbstractItemModel::rowsRemoved);
    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
    RunRecord c = record(3, "c", RunState::Running);
    c.last_step = 120;
    model.setRuns({record(1, "a"), c, record(5, "e", RunState::Queued)});
    EXPECT_EQ(resets.count(), 0);
    EXPECT_EQ(inserted.count(), 1);
    EXPECT_EQ(removed.count(), 1);
    ASSERT_EQ(changed.count(), 1); // only run 3 changed
    EXPECT_EQ(changed.first().at(0).value<QModelIndex>().row(), model.rowOfRun(3));
    EXPECT_EQ(idsOf(model), (std::vector<int64_t>{5, 3, 1}));
    EXPECT_EQ(model.runningCount(), 2); // queued counts as going
    EXPECT_EQ(model.index(model.rowOfRun(3), RunListModel::StepsColumn).data().toString(), QStringLiteral("121 / 100"));
}

TEST(RunListModel, ARunsNewStepsChangeOnlyTheColumnsThatShowThem) {
    RunListModel model;
    RunRecord r = record(1, "training", RunState::Running);
    r.notes = "a note";
    model.setRuns({record(2, "other"), r});
    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
    r.last_step = 120;
    r.last_loss = 0.5;
    r.run_dir = "/runs/1"; // shown by no column (a parent run is: the name says it)
    model.setRuns({record(2, "other"), r});
    ASSERT_EQ(changed.count(), 1);
    const auto from = changed.first().at(0).value<QModelIndex>();
    const auto to = changed.first().at(1).value<QModelIndex>();
    EXPECT_EQ(from.row(), model.rowOfRun(1));
    EXPECT_EQ(from.column(), RunListModel::StepsColumn);
    EXPECT_EQ(to.column(), RunListModel::LossColumn);
    // A note being typed in that row is not covered, so its editor keeps the typed text.
    EXPECT_LT(to.column(), RunListModel::TagsColumn);
    EXPECT_EQ(model.run(1)->run_dir, "/runs/1");
    changed.clear();
    model.setRuns({record(2, "other"), r});
    EXPECT_EQ(changed.count(), 0);
}

TEST(RunListModel, ShowsStatesInColorAndMissingFiguresEmpty) {
    RunListModel model;
    RunRecord failed = record(1, "f", RunState::Failed);
    failed.exit_reason = "rank 3 exited with signal 9 (SIGKILL)";
    failed.exit_code = 137;
    RunRecord fresh = record(2, "q", RunState::Queued);
    fresh.last_loss.reset();
    fresh.tokens_per_s.reset();
    fresh.started_at = 0;
    model.setRuns({failed, fresh});
    const QModelIndex state = model.index(model.rowOfRun(1), RunListModel::StateColumn);
    EXPECT_EQ(state.data(Qt::ForegroundRole).value<QColor>(), RunListModel::stateColor(QStringLiteral("failed")));
    EXPECT_NE(RunListModel::stateColor(QStringLiteral("failed")), RunListModel::stateColor(QStringLiteral("succeeded")));
    EXPECT_TRUE(state.data(Qt::ToolTipRole).toString().contains(QStringLiteral("SIGKILL")));
    const int q = model.rowOfRun(2);
    EXPECT_TRUE(model.index(q, RunListModel::LossColumn).data().toString().isEmpty());
    EXPECT_TRUE(model.index(q, RunListModel::DurationColumn).data().toString().isEmpty());
    EXPECT_EQ(model.index(model.rowOfRun(1), RunListModel::DurationColumn).data().toString(), QStringLiteral("1m 00s"));
}

TEST(RunFilterModel, FiltersByWordsAndStateAndSortsMissingLast) {
    RunListModel model;
    RunRecord a = record(1, "mmdit-fashion", RunState::Succeeded);
    a.model_kind = "mmdit";
    a.tags = {"baseline"};
    RunRecord b = record(2, "gpt-text", RunState::Failed);
    b.notes = "NaN at step 40";
    RunRecord c = record(3, "gpt-zero3", RunState::Running);
    c.last_loss.reset();
    model.setRuns({a, b, c});
    RunFilterModel filter;
    filter.setSourceModel(&model);

    filter.setFilterText(QStringLiteral("GPT"));
    EXPECT_EQ(idsOf(filter).size(), 2u);
    filter.setFilterText(QStringLiteral("nan 40"));
    EXPECT_EQ(idsOf(filter), (std::vector<int64_t>{2}));
    filter.setFilterText(QStringLiteral("baseline"));
    EXPECT_EQ(idsOf(filter), (std::vector<int64_t>{1}));
    filter.setFilterText({});
    filter.setStates({QStringLiteral("running"), QStringLiteral("failed")});
    EXPECT_EQ(filter.rowCount(), 2);
    filter.setStates({});

    filter.sort(RunListModel::LossColumn, Qt::AscendingOrder);
    EXPECT_EQ(idsOf(filter), (std::vector<int64_t>{1, 2, 3}));
    filter.sort(RunListModel::LossColumn, Qt::DescendingOrder);
    EXPECT_EQ(idsOf(filter), (std::vector<int64_t>{2, 1, 3})); // no loss: last either way
    filter.sort(RunListModel::NameColumn, Qt::AscendingOrder);
    EXPECT_EQ(idsOf(filter), (std::vector<int64_t>{2, 3, 1}));
}

TEST(RunListModel, WritesTagsAndNotesThroughTheStoreThread) {
    CraftedStore store;
    const int64_t id = store.addRun(tinySpec("noted"), RunState::Succeeded, 3);
    RunStoreThread writer(store.qpath());
    RunListModel model;
    model.setRuns(store.store.listRuns());
    const int row = model.rowOfRun(id);
    EXPECT_FALSE(model.flags(model.index(row, RunListModel::NotesColumn)) & Qt::ItemIsEditable); // no writer yet
    model.setWriter(&writer);
    EXPECT_TRUE(model.flags(model.index(row, RunListModel::NotesColumn)) & Qt::ItemIsEditable);
    EXPECT_FALSE(model.flags(model.index(row, RunListModel::LossColumn)) & Qt::ItemIsEditable);

    QSignalSpy written(&writer, &RunStoreThread::written);
    ASSERT_TRUE(model.setData(model.index(row, RunListModel::NotesColumn), QStringLiteral("diverged after warmup")));
    ASSERT_TRUE(model.setData(model.index(row, RunListModel::TagsColumn), QStringLiteral("sweep, lr  sweep")));
    EXPECT_EQ(model.index(row, RunListModel::TagsColumn).data().toString(), QStringLiteral("sweep, lr"));

    // A snapshot read before the writes landed does not take the edit back.
    RunRecord stale = *store.store.run(id);
    stale.notes.clear();
    model.setRuns({stale});
    EXPECT_EQ(model.index(row, RunListModel::NotesColumn).data().toString(), QStringLiteral("diverged after warmup"));

    ASSERT_TRUE(waitFor([&] { return written.count() == 2; }));
    writer.waitForIdle();
    RunStore reader(store.path);
    const RunRecord stored = *reader.run(id);
    EXPECT_EQ(stored.notes, "diverged after warmup");
    EXPECT_EQ(stored.tags, (std::vector<std::string>{"sweep", "lr"}));
}

TEST(RunListModel, ParsesTags) {
    EXPECT_EQ(RunListModel::parseTags(QStringLiteral(" a,b  c,,a ")), (QStringList{"a", "b", "c"}));
    EXPECT_TRUE(RunListModel::parseTags(QStringLiteral(" , ")).isEmpty());
}

// Issue 19: a resumed run showed only its own steps, with no word of the run it continues.
TEST(RunListModel, AResumedRunNamesItsParentAndTheStepItResumedAt) {
    RunListModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
    RunRecord parent = record(3, "gpt-dp2", RunState::Failed);
    RunRecord child = record(5, "gpt-dp2", RunState::Running);
    child.parent_run = 3;
    model.setRuns({parent, child, record(4, "other")});
    const auto cell = [&](int64_t id, int column, int role) {
        return model.index(model.rowOfRun(id), column).data(role).toString();
    };
    EXPECT_EQ(cell(5, RunListModel::NameColumn, Qt::DisplayRole), QStringLiteral("gpt-dp2  (resumed from #3)"));
    EXPECT_EQ(cell(5, RunListModel::NameColumn, Qt::EditRole), QStringLiteral("gpt-dp2"));
    EXPECT_EQ(cell(4, RunListModel::NameColumn, Qt::DisplayRole), QStringLiteral("other"));

    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
    model.setResumeSteps({{5, 40}});
    EXPECT_GE(changed.count(), 1);
    EXPECT_EQ(cell(5, RunListModel::NameColumn, Qt::DisplayRole), QStringLiteral("gpt-dp2  (resumed from #3 at step 40)"));
    EXPECT_EQ(cell(5, RunListModel::StepsColumn, Qt::ToolTipRole),
              QStringLiteral("Resumed from run #3 gpt-dp2 at step 40, from its checkpoint: steps before 40 are in run #3"));
    // The parent says which runs continue it.
    EXPECT_EQ(cell(3, RunListModel::IdColumn, Qt::ToolTipRole), QStringLiteral("Resumed as run #5 at step 40 (running)"));
    EXPECT_EQ(cell(4, RunListModel::IdColumn, Qt::ToolTipRole), QString());
    // The parent deleted: the link goes, and the name says so at once.
    child.parent_run.reset();
    model.setRuns({child, record(4, "other")});
    EXPECT_EQ(cell(5, RunListModel::NameColumn, Qt::DisplayRole), QStringLiteral("gpt-dp2"));
}

#include "BrowseTestSupport.h"
#include "RunsPageHarness.h"

#include "ui/models/RunFilterModel.h"
#include "ui/models/RunListModel.h"
#include "ui/models/RunMetricsCsv.h"
#include "ui/models/RunStoreThread.h"
#include "ui/models/StoreWatcher.h"
#include "ui/models/RunLauncher.h"
#include "ui/pages/RunsPage.h"
#include "ui/widgets/TableExport.h"

#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QPushButton>
#include <QFile>
#include <QJsonObject>
#include <QJsonDocument>
#include <QJsonArray>
#include <QLineEdit>
#include <QSignalSpy>
#include <QTableView>

#include <gtest/gtest.h>

#include <cmath>

using namespace parallax;
using namespace parallax::test;

namespace {

struct Fixture : RunsPageHarness {
    int64_t succeeded = 0, failed = 0, running = 0;

    Fixture() {
        // A run of a kind since retired, as an old store holds it: listed, filtered and exported
        // like any other.
        RunSpec a = tinySpec("mmdit-fashion-dp2");
        a.model.kind = Choice<ModelKind>::named("mmdit");
        succeeded = store.addRun(a, RunState::Succeeded, 30, 4.0, 1.7e9, {"baseline"});
        RunSpec b = tinySpec("gpt-text-lr3e3");
        b.train.lr = 3e-3;
        failed = store.addRun(b, RunState::Failed, 12);
        running = store.addRun(tinySpec("gpt-zero3"), RunState::Running, 5);
        open(3, 1200, 600);
    }
    int shown() const { return page->view()->model()->rowCount(); }
    int64_t shownId(int row) const {
        return page->view()->model()->index(row, 0).data(RunListModel::RunIdRole).toLongLong();
    }
};

} // namespace

TEST(RunsPage, ListsEveryRunOfTheStore) {
    Fixture f;
    ASSERT_EQ(f.shown(), 3);
    EXPECT_EQ(f.shownId(0), f.running); // newest first
    QAbstractItemModel* m = f.page->view()->model();
    const int row = f.runs.rowOfRun(f.failed);
    EXPECT_EQ(f.runs.index(row, RunListModel::NameColumn).data().toString(), QStringLiteral("gpt-text-lr3e3"));
    EXPECT_EQ(f.runs.index(row, RunListModel::StateColumn).data().toString(), QStringLiteral("failed"));
    EXPECT_EQ(f.runs.index(row, RunListModel::LayoutColumn).data().toString(), QStringLiteral("dp2 tp1 pp1 zero0"));
    EXPECT_EQ(f.runs.index(row, RunListModel::StepsColumn).data().toString(), QStringLiteral("12 / 20"));
    EXPECT_FALSE(f.runs.index(row, RunListModel::LossColumn).data().toString().isEmpty());
    EXPECT_EQ(m->columnCount(), RunListModel::ColumnCount);
}

TEST(RunsPage, FiltersByTextAndState) {
    Fixture f;
    f.page->filterEdit()->setText(QStringLiteral("gpt"));
    EXPECT_EQ(f.shown(), 2);
    f.page->filterEdit()->setText(QStringLiteral("baseline")); // a tag
    ASSERT_EQ(f.shown(), 1);
    EXPECT_EQ(f.shownId(0), f.succeeded);
    f.page->filterEdit()->clear();
    f.page->setStateFilter(QStringLiteral("failed"));
    ASSERT_EQ(f.shown(), 1);
    EXPECT_EQ(f.shownId(0), f.failed);
    f.page->setFilterText(QStringLiteral("mmdit"));
    EXPECT_EQ(f.shown(), 0);
    f.page->setStateFilter({});
    EXPECT_EQ(f.shown(), 1);
}

TEST(RunsPage, EditsNotesInPlaceAndTheStoreKeepsThem) {
    Fixture f;
    f.page->setFilterText(QStringLiteral("lr3e3"));
    ASSERT_EQ(f.shown(), 1);
    QAbstractItemModel* m = f.page->view()->model();
    const QModelIndex notes = m->index(0, RunListModel::NotesColumn);
    ASSERT_TRUE(notes.flags() & Qt::ItemIsEditable);
    ASSERT_TRUE(m->setData(notes, QStringLiteral("lr too high: diverged at step 9")));
    ASSERT_TRUE(waitFor([&] {
        RunStore reader(f.store.path);
        return reader.run(f.failed)->notes == "lr too high: diverged at step 9";
    }));
    // The next snapshot from the store shows the note too, and the filter finds it.
    f.page->setFilterText(QStringLiteral("diverged"));
    ASSERT_TRUE(waitFor([&] { return f.shown() == 1; }));
    EXPECT_EQ(f.shownId(0), f.failed);
}

TEST(RunsPage, ANoteLandsOnTheRunItWasTypedForWhileTheListChanges) {
    Fixture f;
    f.page->show();
    QTableView* view = f.page->view();
    // By steps: the running run (5 steps) first, then the failed one (12), then the succeeded (30).
    view->sortByColumn(RunListModel::StepsColumn, Qt::AscendingOrder);
    ASSERT_EQ(f.shownId(0), f.running);
    const QModelIndex notes = view->model()->index(0, RunListModel::NotesColumn);
    view->setCurrentIndex(notes);
    view->edit(notes);
    auto* editor = qobject_cast<QLineEdit*>(view->indexWidget(notes));
    ASSERT_NE(editor, nullptr);
    editor->setText(QStringLiteral("zero3 went fine"));
    // While the note is typed, the running run trains past the others.
    StepEvent e;
    e.step = 40;
    e.loss = 0.5;
    e.t = 1.7e9 + 40;
    f.store.store.insertMetric(f.running, e);
    f.store.store.updateSummary(f.running, e);
    ASSERT_TRUE(waitFor([&] { return f.runs.run(f.running)->last_step == 40; }));
    QTest::qWait(50);
    // The row under the editor is still the run it was opened on, and the text still what was typed.
    EXPECT_EQ(f.shownId(0), f.running);
    EXPECT_EQ(editor->text(), QStringLiteral("zero3 went fine"));
    QTest::keyClick(editor, Qt::Key_Return);
    ASSERT_TRUE(waitFor([&] {
        RunStore reader(f.store.path);
        return reader.run(f.running)->notes == "zero3 went fine";
    }));
    RunStore reader(f.store.path);
    EXPECT_EQ(reader.run(f.failed)->notes, "");
    EXPECT_EQ(reader.run(f.succeeded)->notes, "");
    // Once the editor closed, the list sorts again.
    ASSERT_TRUE(waitFor([&] { return f.shownId(2) == f.running; }));
}

// Issue 19: resumed runs had no link to their parent. `parallax-cli resume` creates a new run with
// parent_run set; its run_start says the step it resumed at.
TEST(RunsPage, AResumedRunSaysWhichRunAndStepItContinues) {
    Fixture f;
    NewRun n;
    n.name = "gpt-text-lr3e3";
    n.steps_total = 20;
    n.world_size = 2;
    n.parent_run = f.failed;
    const int64_t resumed = f.store.store.createRun(n);
    f.store.store.markRunning(resumed, 4242, "testhost");
    RunStartEvent start;
    start.world = 2;
    start.start_step = 12;
    f.store.store.setRunStart(resumed, start);
    StepEvent step;
    step.step = 12;
    step.loss = 1.0;
    f.store.store.insertMetric(resumed, step);
    f.store.store.updateSummary(resumed, step);
    f.watcher->pollNow();
    const auto name = [&] {
        const int row = f.runs.rowOfRun(resumed);
        return row < 0 ? QString() : f.runs.index(row, RunListModel::NameColumn).data().toString();
    };
    ASSERT_TRUE(waitFor([&] { return name() == QStringLiteral("gpt-text-lr3e3  (resumed from #%1 at step 12)").arg(f.failed); }))
        << name().toStdString();
    const QString parentTip = f.runs.index(f.runs.rowOfRun(f.failed), RunListModel::IdColumn).data(Qt::ToolTipRole).toString();
    EXPECT_EQ(parentTip, QStringLiteral("Resumed as run #%1 at step 12 (running)").arg(resumed));
}

// A run that another run already continues is not resumed again: that would start a second branch
// from its older checkpoint. Resume is off, its tooltip names the run that continues it and the run
// to resume, the newest of the lineage.
TEST(RunsPage, ResumeIsOffForARunThatAnotherRunContinues) {
    Fixture f;
    QPushButton* resume = f.page->resumeButton();
    f.page->selectRun(f.failed);
    EXPECT_TRUE(resume->isEnabled());
    const QString whatItDoes = resume->toolTip();

    const int64_t next = f.store.addContinuation(tinySpec("gpt-text-lr3e3"), f.failed, 12, RunState::Failed, 3);
    f.watcher->pollNow();
    ASSERT_TRUE(waitFor([&] { return f.runs.rowOfRun(next) >= 0; }));
    f.page->selectRun(f.failed);
    EXPECT_FALSE(resume->isEnabled());
    EXPECT_EQ(resume->toolTip(), QStringLiteral("Run #%1 already continues this run: resume run #%1").arg(next));
    f.page->resumeCurrent();
    EXPECT_FALSE(f.page->launcher()->isBusy()) << "nothing was started";

    // The continuation, which no run continues yet, is the one to resume.
    f.page->selectRun(next);
    EXPECT_TRUE(resume->isEnabled());
    EXPECT_EQ(resume->toolTip(), whatItDoes);

    // Further down the lineage, the newest run is named, as it is going.
    const int64_t newest = f.store.addContinuation(tinySpec("gpt-text-lr3e3"), next, 15, RunState::Running, 2);
    f.watcher->pollNow();
    ASSERT_TRUE(waitFor([&] { return f.runs.rowOfRun(newest) >= 0; }));
    f.page->selectRun(f.failed);
    EXPECT_FALSE(resume->isEnabled());
    EXPECT_EQ(resume->toolTip(),
              QStringLiteral("Run #%1 already continues this run, and run #%2 continues the lineage (running)").arg(next).arg(newest));
    f.page->selectRun(next);
    EXPECT_FALSE(resume->isEnabled());
    EXPECT_EQ(resume->toolTip(), QStringLiteral("Run #%1 already continues this run (running)").arg(newest));
}

// Copy puts the selected rows on the clipboard under the column headers, as the table shows them;
// Export CSV writes raw values: numbers as numbers, durations in seconds, steps done and planned in
// columns of their own, no units.
TEST(RunsPage, CopiesWithTheHeaderAndExportsRawValuesAsCsv) {
    Fixture f;
    auto* exporter = f.page->view()->findChild<TableExport*>();
    ASSERT_NE(exporter, nullptr);
    f.page->selectRun(f.failed);
    exporter->copyAction()->trigger();
    const QStringList copied = QApplication::clipboard()->text().split(QChar('\n'), Qt::SkipEmptyParts);
    ASSERT_EQ(copied.size(), 2) << QApplication::clipboard()->text().toStdString();
    EXPECT_EQ(copied[0], QStringLiteral("ID\tState\tName\tModel\tLayout\tSteps\tLoss\tTokens/s\tMFU\tDuration\tCreated\tTags\tNotes"
                                        "\tBase model\tFinetune"));
    EXPECT_TRUE(copied[1].startsWith(QStringLiteral("%1\tfailed\tgpt-text-lr3e3\t").arg(f.failed))) << copied[1].toStdString();
    EXPECT_TRUE(copied[1].contains(QStringLiteral("\t12 / 20\t"))) << copied[1].toStdString();

    const QString path = f.store.dir.filePath(QStringLiteral("runs.csv"));
    QString error;
    ASSERT_TRUE(exporter->saveCsv(path, &error)) << error.toStdString();
    QFile file(path);
    ASSERT_TRUE(file.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(file.readAll()).split(QChar('\n'), Qt::SkipEmptyParts);
    ASSERT_EQ(lines.size(), 4);
    EXPECT_EQ(lines[0], QStringLiteral("id,state,name,parent_run,model,layout,steps_done,steps_total,loss,tokens_per_s,mfu,"
                                       "duration_s,created_at,tags,notes,model_from,model_preset,finetune_mode,lora_r"));
    QStringList failed;
    for (const QString& line : lines)
        if (line.startsWith(QStringLiteral("%1,").arg(f.failed))) failed = line.split(QChar(','));
    ASSERT_EQ(failed.size(), 19) << lines.join(QChar('\n')).toStdString();
    const RunRecord r = *f.runs.run(f.failed);
    EXPECT_EQ(failed[1], QStringLiteral("failed"));
    EXPECT_EQ(failed[2], QStringLiteral("gpt-text-lr3e3"));
    EXPECT_EQ(failed[3], QString()); // no parent
    EXPECT_EQ(failed[5], QStringLiteral("dp2 tp1 pp1 zero0"));
    EXPECT_EQ(failed[6], QStringLiteral("12"));
    EXPECT_EQ(failed[7], QStringLiteral("20"));
    EXPECT_EQ(failed[8].toDouble(), *r.last_loss); // every digit, not the 5 shown
    EXPECT_EQ(failed[9], QStringLiteral("1011"));
    EXPECT_EQ(failed[10], QStringLiteral("0.25")); // a fraction, not "25.0%"
    bool seconds = false;
    EXPECT_EQ(failed[11].toDouble(&seconds), r.ended_at - r.started_at) << failed[11].toStdString();
    EXPECT_TRUE(seconds) << failed[11].toStdString();
    EXPECT_EQ(failed[12].toDouble(), r.created_at);
    const QString succeeded = lines.filter(QStringLiteral("mmdit-fashion-dp2")).value(0);
    // The preset of a run without model.from; a run without [finetune] shows none.
    EXPECT_TRUE(succeeded.endsWith(QStringLiteral(",baseline,,,tiny,,"))) << succeeded.toStdString();
}

TEST(RunsPage, ExportsMetricsAsCsvAndTheSpec) {
    Fixture f;
    const QString csv = f.store.dir.filePath(QStringLiteral("m.csv"));
    QSignalSpy done(f.page.get(), &RunsPage::exportFinished);
    f.page->exportMetrics(f.failed, csv);
    ASSERT_TRUE(waitFor([&] { return done.count() == 1; }));
    QFile file(csv);
    ASSERT_TRUE(file.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(file.readAll()).split(QChar('\n'), Qt::SkipEmptyParts);
    ASSERT_EQ(lines.size(), 13); // header + 12 steps
    EXPECT_EQ(lines[0], QStringLiteral("step,loss,lr,grad_norm,tokens_per_s,samples_per_s,step_ms,step_ms_min,"
                                       "step_ms_max,slowest_rank,mfu,tokens,peak_mem,t"));
    EXPECT_TRUE(lines[1].startsWith(QStringLiteral("0,4.1,0.001,1,1000,10,100,95,110,0,0.25,512,1.5e+09,1.7e+09")))
        << lines[1].toStdString();

    const QString spec = f.store.dir.filePath(QStringLiteral("s.toml"));
    QString error;
    ASSERT_TRUE(f.page->exportSpec(f.failed, spec, &error)) << error.toStdString();
    EXPECT_DOUBLE_EQ(readSpecFile(spec.toStdString()).train.lr, 3e-3);
}

// The Export trace button writes what parallax-cli trace writes: every step of the run as a complete
// event on the run's steps track (the format itself is checked by CliTrace in tests/e2e).
TEST(RunsPage, ExportsTheRunAsATrace) {
    Fixture f;
    const QString path = f.store.dir.filePath(QStringLiteral("t.json"));
    QSignalSpy done(f.page.get(), &RunsPage::exportFinished);
    QSignalSpy status(f.page.get(), &RunsPage::statusMessage);
    f.page->exportTrace(f.failed, path);
    ASSERT_TRUE(waitFor([&] { return done.count() == 1; }));
    QFile file(path);
    ASSERT_TRUE(file.open(QIODevice::ReadOnly));
    const QJsonObject trace = QJsonDocument::fromJson(file.readAll()).object();
    int steps = 0;
    for (const QJsonValue& e : trace.value(QStringLiteral("traceEvents")).toArray())
        if (e.toObject().value(QStringLiteral("cat")).toString() == QStringLiteral("step")) ++steps;
    EXPECT_EQ(steps, 12);
    ASSERT_FALSE(status.isEmpty());
    EXPECT_TRUE(status.last().at(0).toString().contains(QStringLiteral("12 steps"))) << status.last().at(0).toString().toStdString();
}

TEST(RunsPage, DeletesFinishedRunsAndRefusesRunningOnes) {
    Fixture f;
    QString error;
    EXPECT_FALSE(f.page->deleteRun(f.running, false, &error));
    EXPECT_TRUE(error.contains(QStringLiteral("running"))) << error.toStdString();
    ASSERT_TRUE(f.page->deleteRun(f.failed, false, &error)) << error.toStdString();
    ASSERT_TRUE(waitFor([&] { return f.runs.rowCount() == 2; }));
    EXPECT_EQ(f.runs.rowOfRun(f.failed), -1);
    RunStore reader(f.store.path);
    EXPECT_FALSE(reader.run(f.failed).has_value());
}

TEST(RunsPage, SelectionDrivesTheActions) {
    Fixture f;
    QSignalSpy open(f.page.get(), &RunsPage::openRun);
    QSignalSpy compare(f.page.get(), &RunsPage::compareRuns);
    f.page->selectRun(f.failed);
    EXPECT_EQ(f.page->currentRun(), f.failed);
    f.page->openCurrent();
    ASSERT_EQ(open.count(), 1);
    EXPECT_EQ(open.first().at(0).toLongLong(), f.failed);
    f.page->view()->selectAll();
    f.page->compareSelected();
    ASSERT_EQ(compare.count(), 1);
    EXPECT_EQ(compare.first().at(0).value<QList<qint64>>(), (QList<qint64>{f.succeeded, f.failed, f.running}));
}

TEST(RunMetricsCsv, WritesEveryColumnInShortestForm) {
    StepEvent e;
    e.step = 3;
    e.loss = 0.1;
    e.lr = 3e-4;
    e.tokens = 2048;
    e.slowest_rank = 2;
    e.t = 1700000000.25;
    StepEvent diverged = e;
    diverged.step = 4;
    diverged.loss = std::nan("");
    diverged.grad_norm = HUGE_VAL;
    const std::string csv = runMetricsCsv({e, diverged});
    EXPECT_EQ(csv, runMetricsCsvHeader() + "\n3,0.1,3e-04,0,0,0,0,0,0,2,0,2048,0,1700000000.25\n"
                                           "4,nan,3e-04,inf,0,0,0,0,0,2,0,2048,0,1700000000.25\n");
}

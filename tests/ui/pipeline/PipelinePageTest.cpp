#include "PipelineTestSupport.h"

#include "ui/MainWindow.h"
#include "ui/models/SpanModel.h"
#include "ui/models/StoreWatcher.h"
#include "ui/pages/PipelinePage.h"
#include "ui/plots/CurvePlot.h"
#include "ui/plots/PipelineTimeline.h"

#include "core/telemetry/PipelineBubbles.h"

#include <qcustomplot.h>

#include <QListWidget>
#include <QPushButton>
#include <QSettings>
#include <QTableView>

#include <gtest/gtest.h>

using namespace parallax;
using namespace parallax::test;

namespace {

// Step 20 with one stall of the whole pipeline: five idle units more for every stage.
std::vector<SpanEvent> stalledStep(int64_t step) {
    std::vector<SpanEvent> spans = PipelineSpans{}.make(step);
    const double cut = PipelineSpans{}.t0 + 11.0 / 1024.0;
    for (SpanEvent& s : spans) {
        if (s.start >= cut) {
            s.start += 5.0 / 1024.0;
            s.end += 5.0 / 1024.0;
        }
    }
    return spans;
}

double measured(const PipelinePage& page, int row) {
    const SpanModel* m = page.model();
    return m->data(m->index(row, SpanModel::MeasuredColumn), SpanModel::ValueRole).toDouble();
}

QString cell(const PipelinePage& page, int row, int column) {
    const QAbstractItemModel* m = page.table()->model();
    return m->data(m->index(row, column)).toString();
}

struct Fixture {
    PipelineStore store;
    StoreWatcher watcher{store.qpath()};
    PipelinePage page{&watcher};
    Fixture() { watcher.setInterval(20); }
    // A finished 1f1b run over `stages` stages whose one sampled step `step` went as scheduled.
    int64_t addScheduledRun(const std::string& name, int stages, int microbatches, int64_t step) {
        const int64_t run = store.addRun(pipelineSpec(name, stages, microbatches));
        PipelineSpans spans;
        spans.stages = stages;
        spans.microbatches = microbatches;
        store.writeSpans(run, spans.make(step));
        store.finish(run);
        return run;
    }
    // pp 4, 8 micro-batches; steps 0 and 10 as scheduled, 20 with a stall; finished.
    int64_t addStalledRun() {
        const int64_t run = store.addRun(pipelineSpec("pp4", 4, 8));
        store.writeSpans(run, PipelineSpans{}.make(0));
        store.writeSpans(run, PipelineSpans{}.make(10));
        store.writeSpans(run, stalledStep(20));
        store.finish(run);
        return run;
    }
};

} // namespace

TEST(PipelinePage, ShowsMeasuredBubblesNextToTheSchedulesForTheNewestStep) {
    Fixture f;
    f.page.setRun(f.addStalledRun());
    ASSERT_TRUE(waitFor([&] { return f.page.shownStep() == 20; }));
    EXPECT_EQ(f.page.steps(), (std::vector<int64_t>{0, 10, 20}));
    ASSERT_EQ(f.page.model()->rowCount(), 5);
    // 16 busy units in a 27-unit window.
    for (int stage = 0; stage < 4; ++stage) EXPECT_DOUBLE_EQ(measured(f.page, stage), 11.0 / 27.0) << stage;
    EXPECT_EQ(cell(f.page, 0, SpanModel::MeasuredColumn), QStringLiteral("40.7%"));
    EXPECT_EQ(cell(f.page, 0, SpanModel::TheoreticalColumn), QStringLiteral("27.3%"));
    EXPECT_EQ(cell(f.page, 4, SpanModel::StageColumn), QStringLiteral("All stages"));
    EXPECT_EQ(cell(f.page, 4, SpanModel::ExcessColumn), QStringLiteral("+13.5 pp"));
    EXPECT_TRUE(f.page.summaryText().contains(QStringLiteral("measured bubble 40.7%"))) << f.page.summaryText().toStdString();
    EXPECT_TRUE(f.page.summaryText().contains(QStringLiteral("theoretical 27.3%"))) << f.page.summaryText().toStdString();
    EXPECT_TRUE(f.page.headerText().contains(QStringLiteral("pp 4"))) << f.page.headerText().toStdString();
    EXPECT_TRUE(f.page.headerText().contains(QStringLiteral("8 micro-batches"))) << f.page.headerText().toStdString();
    EXPECT_TRUE(f.page.problemsText().isEmpty()) << f.page.problemsText().toStdString();
    EXPECT_EQ(f.page.timeline()->rowCount(), 4);
    EXPECT_EQ(f.page.timeline()->barCount(), int(stalledStep(20).size()));
}

TEST(PipelinePage, StepsAreNavigated) {
    Fixture f;
    const int64_t run = f.store.addRun(pipelineSpec("pp4", 4, 8));
    for (int64_t step : {0, 10, 20}) f.store.writeSpans(run, step == 10 ? stalledStep(step) : PipelineSpans{}.make(step));
    f.store.finish(run);
    f.page.setRun(run);
    ASSERT_TRUE(waitFor([&] { return f.page.shownStep() == 20; }));
    auto* previous = f.page.findChild<QPushButton*>();
    ASSERT_NE(previous, nullptr);
    EXPECT_TRUE(f.page.followNewest());

    f.page.showPreviousStep();
    EXPECT_FALSE(f.page.followNewest());
    ASSERT_TRUE(waitFor([&] { return f.page.shownStep() == 10; }));
    EXPECT_DOUBLE_EQ(f.page.model()->bubbles().overall, 11.0 / 27.0);
    f.page.showPreviousStep();
    ASSERT_TRUE(waitFor([&] { return f.page.shownStep() == 0; }));
    EXPECT_DOUBLE_EQ(f.page.model()->bubbles().overall, 3.0 / 11.0);
    EXPECT_TRUE(f.page.summaryText().startsWith(QStringLiteral("Step 0 "))) << f.page.summaryText().toStdString();
    f.page.showPreviousStep(); // already the first
    EXPECT_EQ(f.page.currentStep(), 0);
    f.page.showNextStep();
    ASSERT_TRUE(waitFor([&] { return f.page.shownStep() == 10; }));
    // A step between samples shows the sample before it.
    f.page.setStep(17);
    EXPECT_EQ(f.page.currentStep(), 10);
    f.page.showNewestStep();
    ASSERT_TRUE(waitFor([&] { return f.page.shownStep() == 20; }));
    // Quick clicks: only the last one counts.
    f.page.showPreviousStep();
    f.page.showPreviousStep();
    f.page.showNextStep();
    ASSERT_TRUE(waitFor([&] { return f.page.shownStep() == 10 && !f.page.isLoading(); }));
    EXPECT_EQ(f.page.model()->step(), 10);
}

TEST(PipelinePage, NewSampledStepsOfARunningRunAppear) {
    Fixture f;
    const int64_t run = f.store.addRun(pipelineSpec("live", 4, 8));
    f.store.writeSpans(run, PipelineSpans{}.make(0));
    f.store.writeSpans(run, PipelineSpans{}.make(10));
    f.page.setRun(run);
    // Step 10 is the newest and may still be missing ranks: held back.
    ASSERT_TRUE(waitFor([&] { return f.page.shownStep() == 0; }));
    EXPECT_EQ(f.page.steps(), (std::vector<int64_t>{0}));

    f.store.writeSpans(run, stalledStep(20));
    ASSERT_TRUE(waitFor([&] { return f.page.steps().size() == 2; }, 15000));
    EXPECT_EQ(f.page.steps(), (std::vector<int64_t>{0, 10}));
    ASSERT_TRUE(waitFor([&] { return f.page.shownStep() == 10; }));

    // Not following: new steps are listed, the shown one stays.
    f.page.setFollowNewest(false);
    f.page.setStep(0);
    ASSERT_TRUE(waitFor([&] { return f.page.shownStep() == 0; }));
    f.store.finish(run);
    ASSERT_TRUE(waitFor([&] { return f.page.steps().size() == 3; }, 15000));
    EXPECT_EQ(f.page.shownStep(), 0);
    f.page.setFollowNewest(true);
    ASSERT_TRUE(waitFor([&] { return f.page.shownStep() == 20; }));
    EXPECT_DOUBLE_EQ(f.page.model()->bubbles().overall, 11.0 / 27.0);
}

TEST(PipelinePage, InterleavedRunsAreComparedWithTheirOwnFormula) {
    Fixture f;
    const int64_t run = f.store.addRun(pipelineSpec("inter", 4, 8, Schedule::Interleaved, 2));
    PipelineSpans crafted;
    crafted.schedule = Schedule::Interleaved;
    crafted.chunks = 2;
    f.store.writeSpans(run, crafted.make(0));
    f.store.finish(run);
    f.page.setRun(run);
    ASSERT_TRUE(waitFor([&] { return f.page.shownStep() == 0; }));
    ASSERT_TRUE(f.page.model()->theoretical().has_value());
    EXPECT_DOUBLE_EQ(*f.page.model()->theoretical(), 3.0 / 19.0);
    EXPECT_NEAR(f.page.model()->bubbles().overall, 3.0 / 19.0, 1e-12);
    EXPECT_TRUE(f.page.problemsText().isEmpty()) << f.page.problemsText().toStdString();
    EXPECT_TRUE(f.page.headerText().contains(QStringLiteral("v 2"))) << f.page.headerText().toStdString();
}

TEST(PipelinePage, ReplicatedStagesAndRecordedProblemsAreShown) {
    Fixture f;
    const int64_t run = f.store.addRun(pipelineSpec("tp2", 4, 8, Schedule::OneFOneB, 1, 1, 2));
    PipelineSpans crafted;
    crafted.replicas = 2;
    std::vector<SpanEvent> spans = crafted.make(0);
    // Rank 3 (stage 1) lost the backward of micro-batch 6.
    spans.erase(std::find_if(spans.begin(), spans.end(), [](const SpanEvent& s) {
        return s.rank == 3 && s.microbatch == 6 && s.kind == "B";
    }));
    f.store.writeSpans(run, spans);
    f.store.finish(run);
    f.page.setRun(run);
    ASSERT_TRUE(waitFor([&] { return f.page.shownStep() == 0; }));
    EXPECT_EQ(f.page.timeline()->rowCount(), 8);
    EXPECT_EQ(cell(f.page, 1, SpanModel::RanksColumn), QStringLiteral("2-3"));
    EXPECT_TRUE(f.page.problemsText().contains(QStringLiteral("rank 3 stage 1 micro-batch 6"))) << f.page.problemsText().toStdString();
    // Rank 3 computed one pass less than rank 2: the stage's ranks disagree.
    const PipelineBubbles::Stage& stage1 = f.page.model()->bubbles().stages[1];
    EXPECT_GT(stage1.maxFraction, stage1.minFraction);
}

TEST(PipelinePage, SaysWhyThereIsNothingToShow) {
    Fixture f;
    RunSpec spec = pipelineSpec("none", 2, 4);
    spec.telemetry.span_every = 0;
    const int64_t quiet = f.store.addRun(spec);
    f.store.finish(quiet);
    f.page.setRun(quiet);
    ASSERT_TRUE(waitFor([&] { return !f.page.isLoading() && f.page.headerText().contains(QStringLiteral("none")); }));
    EXPECT_TRUE(f.page.steps().empty());
    EXPECT_TRUE(f.page.timeline()->placeholderText().contains(QStringLiteral("telemetry.span_every = 0")))
        << f.page.timeline()->placeholderText().toStdString();

    // One stage is no pipeline: its spans are not drawn as a schedule, and the page says why.
    const int64_t flat = f.addScheduledRun("flat", 1, 4, 0);
    f.page.setRun(flat);
    ASSERT_TRUE(waitFor([&] { return !f.page.isLoading() && f.page.headerText().contains(QStringLiteral("flat")); }));
    EXPECT_TRUE(f.page.timeline()->placeholderText().contains(QStringLiteral("no pipeline (parallel.pp = 1)")))
        << f.page.timeline()->placeholderText().toStdString();
    EXPECT_EQ(f.page.timeline()->rowCount(), 0);
    EXPECT_EQ(f.page.model()->rowCount(), 0);
    EXPECT_TRUE(f.page.bubblePane()->isHidden()) << "a bubble chart for a run without a pipeline";

    // A run without a stored spec: measured bubbles, no theoretical value, and why.
    NewRun bare;
    bare.name = "bare";
    const int64_t noSpec = f.store.store.createRun(bare);
    f.store.writeSpans(noSpec, PipelineSpans{}.make(0));
    f.store.finish(noSpec);
    f.page.setRun(noSpec);
    ASSERT_TRUE(waitFor([&] { return f.page.shownStep() == 0; }));
    EXPECT_FALSE(f.page.bubblePane()->isHidden());
    EXPECT_FALSE(f.page.model()->theoretical().has_value());
    EXPECT_TRUE(f.page.summaryText().contains(QStringLiteral("theoretical not known"))) << f.page.summaryText().toStdString();
    EXPECT_DOUBLE_EQ(f.page.model()->bubbles().overall, 3.0 / 11.0);

    f.page.setRun(0);
    EXPECT_EQ(f.page.model()->rowCount(), 0);
    EXPECT_EQ(f.page.timeline()->rowCount(), 0);
}

TEST(PipelinePage, MainWindowHasThePipelinePageForTheOpenedRun) {
    QTemporaryDir settings;
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, settings.path());
    PipelineStore store;
    const int64_t run = store.addRun(pipelineSpec("pp2", 2, 4));
    store.writeSpans(run, PipelineSpans{}.make(0));
    store.finish(run);
    MainWindow w(store.qpath());
    auto* nav = w.findChild<QListWidget*>(QStringLiteral("navigation"));
    ASSERT_NE(nav, nullptr);
    EXPECT_EQ(nav->item(MainWindow::Pipeline)->text(), QStringLiteral("Pipeline"));
    w.openRun(run);
    ASSERT_NE(w.pipelinePage(), nullptr);
    EXPECT_EQ(w.pipelinePage()->run(), run);
    // Not in view (Live is): once the store's thread is done with the pages' reads, it has read
    // no spans for it; it reads them when it is shown.
    ASSERT_TRUE(waitFor([&] { return w.watcher()->pendingReads() == 0; }));
    EXPECT_FALSE(w.pipelinePage()->runModel()->isActive());
    EXPECT_FALSE(w.pipelinePage()->runModel()->spansStep().has_value());
    EXPECT_FALSE(w.pipelinePage()->shownStep().has_value());
    w.showPage(MainWindow::Pipeline);
    EXPECT_TRUE(w.pipelinePage()->runModel()->isActive());
    EXPECT_EQ(w.page(MainWindow::Pipeline), w.pipelinePage());
    ASSERT_TRUE(waitFor([&] { return w.pipelinePage()->shownStep() == 0; }));
}

TEST(PipelinePage, DoesNotWidenTheWindow) {
    // The window is as narrow as its widest page allows, plus the navigation list: this page must
    // not be what keeps the window from 1000 pixels.
    PipelineStore store;
    StoreWatcher watcher(store.qpath());
    PipelinePage page(&watcher);
    EXPECT_LE(page.minimumSizeHint().width(), 820) << page.minimumSizeHint().width();
}

TEST(PipelinePage, ChartsEachSampledStepsMeasuredBubbleAgainstTheSchedules) {
    Fixture f;
    f.page.setRun(f.addStalledRun());
    ASSERT_TRUE(waitFor([&] { return f.page.bubbleHistory().steps().size() == 3; }));

    const double steady = PipelineBubbles::measure(PipelineSpans{}.make(0)).overall * 100.0;
    const double theory = 3.0 / 11.0 * 100.0; // (p - 1) / (m + p - 1), p = 4, m = 8
    CurvePlot* chart = f.page.bubblePlot();
    EXPECT_EQ(chart->curveNames(), (QStringList{"measured bubble", "theoretical"}));
    const PlotTable table = chart->table();
    EXPECT_EQ(table.header, (QStringList{"step", "measured bubble", "theoretical"}));
    ASSERT_EQ(table.rows.size(), 3u);
    EXPECT_EQ(table.rows[0][0], QStringLiteral("0"));
    EXPECT_DOUBLE_EQ(table.rows[0][1].toDouble(), steady);
    EXPECT_EQ(table.rows[2][0], QStringLiteral("20"));
    // The stalled step, as the table measures it when it is shown.
    EXPECT_DOUBLE_EQ(table.rows[2][1].toDouble(), 11.0 / 27.0 * 100.0);
    for (const QStringList& row : table.rows) EXPECT_DOUBLE_EQ(row[2].toDouble(), theory);
    ASSERT_TRUE(waitFor([&] { return f.page.shownStep() == 20; }));
    EXPECT_DOUBLE_EQ(f.page.model()->bubbles().overall * 100.0, table.rows[2][1].toDouble());

    // A click at step 9 on the chart shows sampled step 10 and stops following the newest.
    chart->resize(500, 240);
    chart->show();
    chart->replotNow();
    QCustomPlot* qcp = chart->customPlot();
    const QPoint at(int(qcp->xAxis->coordToPixel(9.0)), qcp->axisRect()->center().y());
    QTest::mouseClick(qcp, Qt::LeftButton, Qt::NoModifier, at);
    ASSERT_TRUE(waitFor([&] { return f.page.shownStep() == 10; }));
    EXPECT_FALSE(f.page.followNewest());

    // Another run: its own steps only, against its own schedule's line.
    const int64_t other = f.addScheduledRun("pp2", 2, 4, 5);
    f.page.setRun(other);
    ASSERT_TRUE(waitFor([&] { return f.page.bubbleHistory().steps().size() == 1; }));
    EXPECT_EQ(f.page.bubbleHistory().steps()[0].step, 5);
    const PlotTable single = f.page.bubblePlot()->table();
    ASSERT_EQ(single.rows.size(), 1u);
    EXPECT_EQ(single.rows[0][0], QStringLiteral("5"));
    EXPECT_DOUBLE_EQ(single.rows[0][2].toDouble(), 100.0 / 5.0);
}

TEST(PipelinePage, BubbleChartGrowsWithARunningRunsSampledSteps) {
    Fixture f;
    const int64_t run = f.store.addRun(pipelineSpec("live", 4, 8));
    f.store.writeSpans(run, PipelineSpans{}.make(0));
    f.store.writeSpans(run, PipelineSpans{}.make(10));
    f.page.setRun(run);
    // The newest step may still be missing ranks: held back from the chart as from the list.
    ASSERT_TRUE(waitFor([&] { return f.page.bubbleHistory().steps().size() == 1; }));
    f.store.writeSpans(run, stalledStep(20));
    ASSERT_TRUE(waitFor([&] { return f.page.bubbleHistory().steps().size() == 2; }, 15000));
    f.store.finish(run);
    ASSERT_TRUE(waitFor([&] { return f.page.bubbleHistory().steps().size() == 3; }, 15000));
    EXPECT_DOUBLE_EQ(*f.page.bubbleHistory().steps()[2].overall, 11.0 / 27.0);
    EXPECT_EQ(f.page.bubbleHistory().measured()->size(), 3u);
}

#include "BrowseTestSupport.h"

#include "core/spec/Estimates.h"

#include "ui/models/RunCheckModel.h"
#include "ui/models/RunListModel.h"
#include "ui/models/SpecDiffModel.h"
#include "ui/models/StoreWatcher.h"
#include "ui/models/SummaryModel.h"
#include "ui/pages/ComparePage.h"
#include "ui/plots/CurvePlot.h"
#include "tests/support/PipelineSpans.h"

#include <qcustomplot.h>

#include <QAbstractItemModelTester>
#include <QSignalSpy>

#include <gtest/gtest.h>

#include <QFont>

#include <cmath>
#include <memory>

using namespace parallax;
using namespace parallax::test;

namespace {

QStringList columnValues(const SpecDiffModel& m, int column) {
    QStringList out;
    for (int row = 0; row < m.rowCount(); ++row) out << m.value(row, column);
    return out;
}

// A Compare page over a store's runs, wired as the console wires it: the watcher's runs fill the
// run list the page picks from (connected before the page connects its own).
struct ComparedStore {
    explicit ComparedStore(const CraftedStore& store) : watcher(store.qpath()) {}
    StoreWatcher watcher;
    RunListModel runs;
    QMetaObject::Connection feed = QObject::connect(&watcher, &StoreWatcher::runsChanged, &runs,
                                                    [this](const std::vector<RunRecord>& r) { runs.setRuns(r); });
    ComparePage page{&runs, &watcher};
};

} // namespace

TEST(ComparePage, TwoRunsShowExactlyTheFieldsThatDiffer) {
    CraftedStore store;
    RunSpec a = tinySpec("base");
    RunSpec b = tinySpec("zero3-lr");
    b.train.lr = 1e-3;
    b.parallel.zero = 3;
    b.preserved_toml = "[train]\nschedule_free = true\n"; // a key this version does not know
    const int64_t ida = store.addRun(a, RunState::Succeeded, 20, 4.0);
    const int64_t idb = store.addRun(b, RunState::Succeeded, 10, 3.0, 1.7e9 + 500);

    ComparedStore compared(store);
    RunListModel& runs = compared.runs;
    ComparePage& page = compared.page;
    QAbstractItemModelTester diffTester(page.diffModel(), QAbstractItemModelTester::FailureReportingMode::Fatal);
    QAbstractItemModelTester summaryTester(page.summaryModel(), QAbstractItemModelTester::FailureReportingMode::Fatal);
    QAbstractItemModelTester pickTester(page.pickModel(), QAbstractItemModelTester::FailureReportingMode::Fatal);
    ASSERT_TRUE(waitFor([&] { return runs.rowCount() == 2; }));

    QSignalSpy loaded(&page, &ComparePage::loaded);
    page.setCheckedRuns({ida, idb});
    ASSERT_TRUE(waitFor([&] { return page.loadedRuns().size() == 2; }));

    const SpecDiffModel* diff = page.diffModel();
    EXPECT_EQ(diff->fields(), (QStringList{"name", "train.lr", "parallel.zero", "train.schedule_free"}));
    ASSERT_EQ(diff->columnCount(), 2);
    EXPECT_EQ(diff->headerData(0, Qt::Horizontal).toString(), QStringLiteral("#%1 base").arg(ida));
    // A title the narrow column elides is whole in its tooltip.
    EXPECT_EQ(diff->headerData(1, Qt::Horizontal, Qt::ToolTipRole).toString(), QStringLiteral("#%1 zero3-lr").arg(idb));
    EXPECT_EQ(page.summaryModel()->headerData(1, Qt::Horizontal, Qt::ToolTipRole).toString(),
              QStringLiteral("#%1 zero3-lr").arg(idb));
    EXPECT_EQ(columnValues(*diff, 0), (QStringList{"\"base\"", "3e-04", "0", ""}));
    EXPECT_EQ(columnValues(*diff, 1), (QStringList{"\"zero3-lr\"", "0.001", "3", "true"}));
    EXPECT_EQ(diff->index(3, 0).data().toString(), QStringLiteral("(unset)"));

    // One curve per run.
    EXPECT_EQ(page.plot()->curveCount(), 2);
    const SummaryModel* summary = page.summaryModel();
    ASSERT_EQ(summary->columnCount(), 2);
    EXPECT_EQ(summary->index(SummaryModel::Steps, 0).data().toString(), QStringLiteral("20 / 20"));
    EXPECT_EQ(summary->index(SummaryModel::Steps, 1).data().toString(), QStringLiteral("10 / 20"));
    // Run a trained twice as long and reaches the lower loss: its figure is the bold one.
    EXPECT_LT(summary->figures()[0].finalLoss.value(), summary->figures()[1].finalLoss.value());
    EXPECT_TRUE(summary->index(SummaryModel::FinalLoss, 0).data(Qt::FontRole).value<QFont>().bold());
    EXPECT_FALSE(summary->index(SummaryModel::FinalLoss, 1).data(Qt::FontRole).isValid());
    // Parameters: the whole model as the form estimates it, with what rank 0 reported beside it.
    const QString whole = QString::fromStdString(formatCount(double(estimate(a).params)));
    EXPECT_EQ(summary->index(SummaryModel::Parameters, 0).data().toString(),
              QStringLiteral("%1 (rank 0: 123.5K)").arg(whole));

    // Unchecking one leaves nothing to compare against.
    page.setCheckedRuns({idb});
    ASSERT_TRUE(waitFor([&] { return page.loadedRuns().size() == 1; }));
    EXPECT_EQ(diff->rowCount(), 0);
    EXPECT_EQ(page.plot()->curveCount(), 1);
}

// A run of a kind this version no longer has ("mmdit", from a store of an earlier version) is
// compared beside a current one: its spec, curve and figures are there, its parameters as rank 0
// counted them (no estimate of a kind without a table row).
TEST(ComparePage, ARunOfARetiredKindComparesBesideACurrentOne) {
    CraftedStore store;
    RunSpec old = tinySpec("mmdit-fashion-dp2");
    old.model.kind = Choice<ModelKind>::named("mmdit");
    old.model.image_size = 28;
    RunSpec now = tinySpec("vae-fashion-dp2");
    now.model.kind = ModelKind::QwenImageVae;
    const int64_t ido = store.addRun(old, RunState::Succeeded, 20, 4.0);
    const int64_t idn = store.addRun(now, RunState::Succeeded, 20, 3.0, 1.7e9 + 500);

    ComparedStore compared(store);
    RunListModel& runs = compared.runs;
    ComparePage& page = compared.page;
    ASSERT_TRUE(waitFor([&] { return runs.rowCount() == 2; }));
    page.setCheckedRuns({ido, idn});
    ASSERT_TRUE(waitFor([&] { return page.loadedRuns().size() == 2; }));

    const SpecDiffModel* diff = page.diffModel();
    const int kindRow = static_cast<int>(diff->fields().indexOf(QStringLiteral("model.kind")));
    ASSERT_GE(kindRow, 0) << diff->fields().join(QStringLiteral(", ")).toStdString();
    EXPECT_EQ(diff->value(kindRow, 0), QStringLiteral("\"mmdit\""));
    EXPECT_EQ(diff->value(kindRow, 1), QStringLiteral("\"qwen_image_vae\""));
    EXPECT_TRUE(diff->fields().contains(QStringLiteral("model.image_size")));
    EXPECT_EQ(page.plot()->curveCount(), 2);
    const SummaryModel* summary = page.summaryModel();
    EXPECT_EQ(summary->index(SummaryModel::Steps, 0).data().toString(), QStringLiteral("20 / 20"));
    EXPECT_TRUE(summary->index(SummaryModel::Parameters, 0).data().toString().contains(QStringLiteral("123.5K")))
        << summary->index(SummaryModel::Parameters, 0).data().toString().toStdString();
}

// A run that continues another (resumed, or gone on after a lost host) is one curve: the parent's
// steps up to where it took over, then its own; its figures stay its own.
TEST(ComparePage, AContinuedRunIsDrawnAsItsLineage) {
    CraftedStore store;
    const int64_t parent = store.addRun(tinySpec("elastic"), RunState::Failed, 50, 4.0);
    NewRun n;
    n.name = "elastic";
    n.parent_run = parent;
    const int64_t child = store.store.createRun(n);
    for (int64_t s = 40; s < 100; ++s) { // from the parent's checkpoint at step 40
        StepEvent e;
        e.step = s;
        e.loss = 2.0;
        e.tokens = (s + 1) * 512;
        e.t = 1.7e9 + 100 + double(s);
        store.store.insertMetric(child, e);
    }
    const CompareRun run = *CompareRun::load(store.store, child);
    EXPECT_EQ(run.continues, std::vector<int64_t>{parent});
    EXPECT_EQ(run.title(), QStringLiteral("#%1 elastic (continues #%2)").arg(child).arg(parent));
    EXPECT_EQ(run.metrics.size(), 60u);
    const auto loss = run.seriesOf(CompareMetric::Loss);
    ASSERT_EQ(loss->size(), 100u);
    EXPECT_EQ(loss->x(MetricAxis::Step, 0), 0.0);
    EXPECT_EQ(loss->x(MetricAxis::Step, 39), 39.0);
    EXPECT_NE(loss->value(39), 2.0); // the parent's
    EXPECT_EQ(loss->x(MetricAxis::Step, 40), 40.0);
    EXPECT_EQ(loss->value(40), 2.0); // its own from where it took over
    // The parent alone is itself.
    EXPECT_TRUE(CompareRun::load(store.store, parent)->continues.empty());
}

// A continued run's summary covers its lineage: the median throughput over the parent's steps (up
// to where it took over) and its own, each without its first step; the parent's time in the duration.
TEST(ComparePage, AContinuedRunsSummaryCoversItsLineage) {
    CraftedStore store;
    // tokens/s of step s: 1000 + s. The parent ran steps 0..49, the child 40..99 from step 40.
    const int64_t parent = store.addRun(tinySpec("elastic"), RunState::Failed, 50, 4.0);
    const int64_t child = store.addContinuation(tinySpec("elastic"), parent, 40, RunState::Succeeded, 60);
    CompareRun run = *CompareRun::load(store.store, child);
    ASSERT_EQ(run.earlier.size(), 40u) << "the parent's steps 0..39";
    const RunRecord p = *store.store.run(parent);
    EXPECT_DOUBLE_EQ(run.earlierSeconds, p.ended_at - p.started_at);
    SummaryModel::Figures f = SummaryModel::figuresOf(run, 0);
    // 1001..1039 and 1041..1099: 98 values, the middle two 1050 and 1051.
    ASSERT_TRUE(f.tokensPerSecond);
    EXPECT_NEAR(*f.tokensPerSecond, 1050.5, 0.5);
    // The parent's hour counts in the duration.
    run.record.started_at = 1000;
    run.record.ended_at = 1600;
    run.earlierSeconds = 3000;
    f = SummaryModel::figuresOf(run, 0);
    ASSERT_TRUE(f.duration);
    EXPECT_DOUBLE_EQ(*f.duration, 3600);
    // Alone, the child's own figures.
    run.earlier.clear();
    run.earlierSeconds = 0;
    f = SummaryModel::figuresOf(run, 0);
    EXPECT_NEAR(*f.tokensPerSecond, 1070, 0.5);
    EXPECT_DOUBLE_EQ(*f.duration, 600);
}

TEST(ComparePage, IdenticalSpecsHaveNoDifferences) {
    CraftedStore store;
    const int64_t a = store.addRun(tinySpec("same"), RunState::Succeeded, 3);
    const int64_t b = store.addRun(tinySpec("same"), RunState::Stopped, 2);
    RunStore& s = store.store;
    CompareRun ra = *CompareRun::load(s, a);
    CompareRun rb = *CompareRun::load(s, b);
    SpecDiffModel diff;
    QAbstractItemModelTester tester(&diff, QAbstractItemModelTester::FailureReportingMode::Fatal);
    diff.setRuns({ra, rb});
    EXPECT_EQ(diff.rowCount(), 0);
    EXPECT_EQ(diff.columnCount(), 2);
}

TEST(ComparePage, HoverShowsEachRunsValueAtThatStepOrThatItHasNone) {
    CraftedStore store;
    const int64_t full = store.addRun(tinySpec("from-zero"), RunState::Succeeded, 100, 4.0);
    // A run whose points start at step 57 (a resumed run's own steps).
    const int64_t late = store.addRun(tinySpec("from-57"), RunState::Succeeded, 0, 4.0);
    for (int64_t s = 57; s < 100; ++s) {
        StepEvent e;
        e.step = s;
        e.loss = 9.0 + double(s) / 1000.0;
        e.tokens = (s + 1) * 512;
        e.t = 1.7e9 + double(s);
        store.store.insertMetric(late, e);
    }

    ComparedStore compared(store);
    RunListModel& runs = compared.runs;
    ComparePage& page = compared.page;
    page.resize(1200, 800);
    page.show();
    ASSERT_TRUE(waitFor([&] { return runs.rowCount() == 2; }));
    page.setCheckedRuns({full, late});
    ASSERT_TRUE(waitFor([&] { return page.loadedRuns().size() == 2; }));
    page.plot()->replotNow();

    const double loss26 = 4.0 * std::exp(-0.05 * 26.0) + 0.1;
    const QString at26 = page.plot()->hoverText(26.2);
    const QStringList lines = at26.split(QChar('\n'));
    ASSERT_EQ(lines.size(), 3) << at26.toStdString();
    EXPECT_EQ(lines[0], QStringLiteral("step 26"));
    EXPECT_TRUE(lines.contains(QStringLiteral("#%1 from-zero: %2").arg(full).arg(loss26, 0, 'g', 5))) << at26.toStdString();
    // Not the step-57 loss of the run that has no step 26.
    EXPECT_TRUE(lines.contains(QStringLiteral("#%1 from-57: no point here").arg(late))) << at26.toStdString();
    EXPECT_FALSE(at26.contains(QStringLiteral("9.05"))) << at26.toStdString();

    const QString at60 = page.plot()->hoverText(60.0);
    EXPECT_TRUE(at60.contains(QStringLiteral("#%1 from-57: 9.06").arg(late))) << at60.toStdString();
}

TEST(SummaryModel, UsesMediansAfterTheFirstStep) {
    CompareRun run;
    run.record.id = 1;
    run.record.started_at = 100;
    run.record.ended_at = 160;
    run.record.steps_total = 4;
    for (int s = 0; s < 4; ++s) {
        StepEvent e;
        e.step = s;
        e.loss = s == 2 ? 0.5 : 1.0 - 0.1 * s;
        e.tokens_per_s = s == 0 ? 1.0 : 100.0 * s; // the first step is slow
        e.mfu = 0.1 * (s + 1);
        run.metrics.push_back(e);
    }
    const SummaryModel::Figures f = SummaryModel::figuresOf(run, 1000);
    EXPECT_DOUBLE_EQ(f.finalLoss.value(), 0.7);
    EXPECT_DOUBLE_EQ(f.bestLoss.value(), 0.5);
    EXPECT_DOUBLE_EQ(f.tokensPerSecond.value(), 200.0);
    EXPECT_DOUBLE_EQ(f.mfu.value(), 0.3);
    EXPECT_DOUBLE_EQ(f.duration.value(), 60.0);
    EXPECT_EQ(f.steps, 4);
}

TEST(SummaryModel, ShowsGpuUtilizationAndTheMeasuredBubbleAgainstTheory) {
    CraftedStore store;
    RunSpec spec = tinySpec("piped");
    spec.launch.device = Device::Cuda;
    spec.parallel.dp = 1;
    spec.parallel.pp = 2;
    spec.train.global_batch = 16;
    spec.train.micro_batch = 2; // 8 micro-batches: theory 1/9
    const double start = 1.7e9;
    const int64_t id = store.addRun(spec, RunState::Succeeded, 6, 4.0, start);
    auto sample = [&](int rank, int device, double t, double util) {
        DeviceEvent d;
        d.rank = rank;
        d.host = "node7";
        d.device = device;
        d.util = util;
        d.t = t;
        store.store.insertDeviceSample(id, d);
    };
    sample(0, 0, start + 0.5, 5.0); // during step 0, the warm-up: left out
    sample(0, 0, start + 2, 90.0);
    sample(0, 0, start + 3, 80.0);
    sample(1, 1, start + 4, 70.0);
    test::PipelineSpans schedule;
    schedule.stages = 2;
    schedule.microbatches = 8;
    for (int64_t step : {0, 2}) store.store.insertSpans(id, schedule.make(step));

    const CompareRun run = *CompareRun::load(store.store, id);
    SummaryModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
    model.setRuns({run}, start + 100);
    const SummaryModel::Figures& f = model.figures().at(0);
    ASSERT_TRUE(f.gpuUtilization.has_value());
    EXPECT_DOUBLE_EQ(*f.gpuUtilization, 77.5); // ranks' means 85 and 70
    EXPECT_EQ(model.index(SummaryModel::GpuUtilization, 0).data().toString(), QStringLiteral("77.5%"));
    const QString detail = model.index(SummaryModel::GpuUtilization, 0).data(Qt::ToolTipRole).toString();
    EXPECT_TRUE(detail.contains(QStringLiteral("rank 0 (node7, GPU 0): 85.0% mean, 80% lowest"))) << detail.toStdString();
    EXPECT_TRUE(detail.contains(QStringLiteral("rank 1 (node7, GPU 1)"))) << detail.toStdString();
    // Equal passes and free communication: measured equals theory.
    EXPECT_EQ(model.index(SummaryModel::PipelineBubble, 0).data().toString(), QStringLiteral("11.1% (theory 11.1%)"));
    EXPECT_EQ(model.headerData(SummaryModel::PipelineBubble, Qt::Vertical).toString(),
              QStringLiteral("Pipeline bubble (median)"));
}

// A CPU run has no GPU utilization and a run without a pipeline no bubble: each is said, and neither
// is scored against the runs that have one.
TEST(SummaryModel, CpuRunsHaveNoGpuUtilizationAndNoBubbleWithoutSpans) {
    CraftedStore store;
    const int64_t id = store.addRun(tinySpec("cpu"), RunState::Succeeded, 4);
    DeviceEvent d;
    d.rank = 0;
    d.device = -1;
    d.cpu_pct = 100;
    d.t = 1.7e9 + 2;
    store.store.insertDeviceSample(id, d);
    SummaryModel model;
    model.setRuns({*CompareRun::load(store.store, id)}, 1.7e9 + 100);
    EXPECT_FALSE(model.figures().at(0).gpuUtilization.has_value());
    EXPECT_FALSE(model.figures().at(0).bubble.has_value());
    EXPECT_EQ(model.index(SummaryModel::GpuUtilization, 0).data().toString(), QStringLiteral("n/a (CPU)"));
    EXPECT_EQ(model.index(SummaryModel::PipelineBubble, 0).data().toString(), QStringLiteral("no pipeline"));

    // Beside a pipelined run, the one without a pipeline is no "best bubble" at 0 %.
    RunSpec piped = tinySpec("piped");
    piped.parallel.dp = 1;
    piped.parallel.pp = 2;
    piped.train.global_batch = 16;
    piped.train.micro_batch = 2;
    const int64_t pipedId = store.addRun(piped, RunState::Succeeded, 4);
    test::PipelineSpans schedule;
    schedule.stages = 2;
    schedule.microbatches = 8;
    for (int64_t step : {0, 2}) store.store.insertSpans(pipedId, schedule.make(step));
    test::PipelineSpans one; // the spans of a run of one stage: idle 0 %
    one.stages = 1;
    one.microbatches = 4;
    for (int64_t step : {0, 2}) store.store.insertSpans(id, one.make(step));
    model.setRuns({*CompareRun::load(store.store, id), *CompareRun::load(store.store, pipedId)}, 1.7e9 + 100);
    EXPECT_FALSE(model.index(SummaryModel::PipelineBubble, 0).data(Qt::FontRole).isValid()) << "not scored";
    EXPECT_TRUE(model.index(SummaryModel::PipelineBubble, 1).data(Qt::FontRole).value<QFont>().bold());
    EXPECT_EQ(model.index(SummaryModel::PipelineBubble, 0).data().toString(), QStringLiteral("no pipeline"));
}

namespace {

struct ComparePageFixture {
    CraftedStore store;
    std::vector<int64_t> ids;
    std::unique_ptr<ComparedStore> compared; // made once the runs are in the store
    ComparePage* page = nullptr;
    explicit ComparePageFixture(int count) {
        for (int i = 0; i < count; ++i)
            ids.push_back(store.addRun(tinySpec("run" + std::to_string(i)), RunState::Succeeded, 30, 4.0 + i));
        compared = std::make_unique<ComparedStore>(store);
        page = &compared->page;
        EXPECT_TRUE(waitFor([&] { return compared->runs.rowCount() == count; }));
    }
    bool check(const QList<qint64>& which) {
        page->setCheckedRuns(which);
        return waitFor([&] {
            if (page->loadedRuns().size() != size_t(which.size())) return false;
            for (size_t i = 0; i < page->loadedRuns().size(); ++i)
                if (page->loadedRuns()[i].record.id != which[qsizetype(i)]) return false;
            return true;
        });
    }
    QString title(int i) const { return QStringLiteral("#%1 run%2").arg(ids[size_t(i)]).arg(i); }
    QColor curve(int i) const { return page->plot()->curveColor(title(i)); }
};

} // namespace

TEST(ComparePage, ARunKeepsItsColourWhenOthersAreCheckedOrUnchecked) {
    ComparePageFixture f(3);
    ASSERT_TRUE(f.check({f.ids[2]}));
    const QColor third = f.curve(2);
    ASSERT_TRUE(third.isValid());
    // Checking runs with lower ids puts them first in the list: the third run's curve keeps its colour.
    ASSERT_TRUE(f.check({f.ids[0], f.ids[2]}));
    EXPECT_EQ(f.curve(2), third);
    const QColor first = f.curve(0);
    EXPECT_NE(first, third);
    ASSERT_TRUE(f.check({f.ids[0], f.ids[1], f.ids[2]}));
    EXPECT_EQ(f.curve(0), first);
    EXPECT_EQ(f.curve(2), third);
    const QColor second = f.curve(1);
    EXPECT_NE(second, first);
    EXPECT_NE(second, third);
    // Unchecking the first moves the others up the list, not to other colours; back, it has its own.
    ASSERT_TRUE(f.check({f.ids[1], f.ids[2]}));
    EXPECT_EQ(f.curve(1), second);
    EXPECT_EQ(f.curve(2), third);
    ASSERT_TRUE(f.check({f.ids[0], f.ids[1], f.ids[2]}));
    EXPECT_EQ(f.curve(0), first);
    EXPECT_EQ(f.page->runColor(f.ids[1]), second);
    // Another metric draws each run in the same colour.
    f.page->setMetric(CompareMetric::TokensPerSecond);
    EXPECT_EQ(f.curve(0), first);
    EXPECT_EQ(f.curve(2), third);
}

TEST(ComparePage, SmoothingDrawsEachRunsEmaOverItsFaintRawCurve) {
    ComparePageFixture f(2);
    ASSERT_TRUE(f.check({f.ids[0], f.ids[1]}));
    EXPECT_EQ(f.page->plot()->curveNames(), (QStringList{f.title(0), f.title(1)}));

    f.page->setSmoothing(90);
    EXPECT_EQ(f.page->plot()->curveNames(),
              (QStringList{f.title(0) + " (raw)", f.title(0), f.title(1) + " (raw)", f.title(1)}));
    // The legend names each run once, in its colour.
    EXPECT_EQ(f.page->plot()->legendNames(), (QStringList{f.title(0), f.title(1)}));
    const QColor color = f.page->runColor(f.ids[0]);
    EXPECT_EQ(f.page->plot()->curveColor(f.title(0)), color);
    EXPECT_EQ(f.page->plot()->curveColor(f.title(0) + " (raw)").rgb(), color.rgb());
    EXPECT_LT(f.page->plot()->curveColor(f.title(0) + " (raw)").alpha(), 255);

    // The smoothed values are the Live page's EMA of the loss, every step.
    MetricSeries expected(MetricSmoothing::ema(0.9));
    for (const StepEvent& e : f.page->loadedRuns()[0].metrics) expected.append(double(e.step), e.t, 0, e.loss);
    const PlotTable table = f.page->plot()->table();
    ASSERT_EQ(table.rows.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_DOUBLE_EQ(table.rows[i][1].toDouble(), expected.value(i)) << i;
        EXPECT_DOUBLE_EQ(table.rows[i][2].toDouble(), expected.smoothed(i)) << i;
    }
    EXPECT_NE(table.rows[5][1], table.rows[5][2]);

    // Kept across a reload and a metric change; 0 turns it off.
    ASSERT_TRUE(f.check({f.ids[1]}));
    EXPECT_EQ(f.page->plot()->curveNames(), (QStringList{f.title(1) + " (raw)", f.title(1)}));
    f.page->setSmoothing(0);
    EXPECT_EQ(f.page->plot()->curveNames(), (QStringList{f.title(1)}));
}

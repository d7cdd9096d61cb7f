#include "BrowseTestSupport.h"

#include "ui/models/RunCheckModel.h"
#include "ui/models/RunListModel.h"
#include "ui/models/SpecDiffModel.h"
#include "ui/models/StoreWatcher.h"
#include "ui/models/SummaryModel.h"
#include "ui/pages/ComparePage.h"
#include "ui/plots/CurvePlot.h"

#include <QAbstractItemModelTester>
#include <QSignalSpy>

#include <gtest/gtest.h>

using namespace parallax;
using namespace parallax::test;

namespace {

QStringList columnValues(const SpecDiffModel& m, int column) {
    QStringList out;
    for (int row = 0; row < m.rowCount(); ++row) out << m.value(row, column);
    return out;
}

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

    StoreWatcher watcher(store.qpath());
    RunListModel runs;
    QObject::connect(&watcher, &StoreWatcher::runsChanged, &runs,
                     [&runs](const std::vector<RunRecord>& r) { runs.setRuns(r); });
    ComparePage page(&runs, &watcher);
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

    // Unchecking one leaves nothing to compare against.
    page.setCheckedRuns({idb});
    ASSERT_TRUE(waitFor([&] { return page.loadedRuns().size() == 1; }));
    EXPECT_EQ(diff->rowCount(), 0);
    EXPECT_EQ(page.plot()->curveCount(), 1);
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

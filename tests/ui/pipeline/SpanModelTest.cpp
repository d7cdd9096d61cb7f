#include "tests/support/PipelineSpans.h"

#include "ui/models/SpanModel.h"

#include <QAbstractItemModelTester>
#include <QSignalSpy>

#include <gtest/gtest.h>

using namespace parallax;
using namespace parallax::test;

namespace {

SpanModel::Schedule schedule(int p, int m, const std::string& name = "1f1b", int v = 1) {
    SpanModel::Schedule s;
    s.stages = p;
    s.microbatches = m;
    s.virtualStages = v;
    s.kind = Choice<Schedule>::named(name);
    return s;
}

double valueAt(const SpanModel& model, int row, int column) {
    return model.data(model.index(row, column), SpanModel::ValueRole).toDouble();
}

QString textAt(const SpanModel& model, int row, int column) {
    return model.data(model.index(row, column)).toString();
}

} // namespace

TEST(SpanModel, PassesTheModelTesterThroughItsChanges) {
    SpanModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
    model.setSchedule(schedule(4, 8));
    model.setSpans(10, PipelineSpans{}.make(10));
    EXPECT_EQ(model.rowCount(), 5);
    model.setSchedule(std::nullopt, QStringLiteral("no spec"));
    PipelineSpans wide;
    wide.replicas = 2;
    model.setSpans(20, wide.make(20));
    model.clear();
    EXPECT_EQ(model.rowCount(), 0);
}

TEST(SpanModel, PerStageMeasuredNextToTheoretical) {
    SpanModel model;
    model.setSchedule(schedule(4, 8));
    model.setSpans(10, PipelineSpans{}.make(10));
    ASSERT_EQ(model.rowCount(), 5);
    ASSERT_EQ(model.overallRow(), 4);
    for (int row = 0; row < 4; ++row) {
        EXPECT_EQ(textAt(model, row, SpanModel::StageColumn), QStringLiteral("Stage %1").arg(row));
        EXPECT_EQ(textAt(model, row, SpanModel::RanksColumn), QString::number(row));
        EXPECT_DOUBLE_EQ(valueAt(model, row, SpanModel::MeasuredColumn), 3.0 / 11.0);
        EXPECT_EQ(textAt(model, row, SpanModel::MeasuredColumn), QStringLiteral("27.3%"));
        EXPECT_EQ(textAt(model, row, SpanModel::TheoreticalColumn), QStringLiteral("27.3%"));
        EXPECT_NEAR(valueAt(model, row, SpanModel::ExcessColumn), 0.0, 1e-12);
        // 16 passes of 1/1024 s busy, 6 idle.
        EXPECT_DOUBLE_EQ(valueAt(model, row, SpanModel::BusyColumn), 16.0 / 1024.0);
        EXPECT_EQ(textAt(model, row, SpanModel::IdleColumn), QStringLiteral("5.86 ms"));
    }
    EXPECT_EQ(textAt(model, 4, SpanModel::StageColumn), QStringLiteral("All stages"));
    EXPECT_EQ(textAt(model, 4, SpanModel::RanksColumn), QStringLiteral("4"));
    EXPECT_DOUBLE_EQ(valueAt(model, 4, SpanModel::MeasuredColumn), 3.0 / 11.0);
    EXPECT_TRUE(model.data(model.index(4, 0), Qt::FontRole).value<QFont>().bold());
    EXPECT_TRUE(model.orderProblems().empty());
}

TEST(SpanModel, ScheduleChangesTheTheoreticalColumnOnly) {
    SpanModel model;
    model.setSpans(10, PipelineSpans{}.make(10));
    EXPECT_FALSE(model.data(model.index(0, SpanModel::TheoreticalColumn), SpanModel::ValueRole).isValid());
    EXPECT_EQ(textAt(model, 0, SpanModel::TheoreticalColumn), QStringLiteral("—"));
    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
    model.setSchedule(schedule(4, 8, "interleaved", 2));
    EXPECT_EQ(changed.count(), 1);
    EXPECT_DOUBLE_EQ(valueAt(model, 0, SpanModel::TheoreticalColumn), 3.0 / 19.0);
    // Measured 3/11 where 3/19 was possible.
    EXPECT_EQ(textAt(model, 0, SpanModel::ExcessColumn), QStringLiteral("+11.5 pp"));
    // The one-chunk spans are not what an interleaved schedule of two chunks records.
    EXPECT_FALSE(model.orderProblems().empty());
    model.setSchedule(schedule(4, 0));
    EXPECT_FALSE(model.theoretical().has_value());
    EXPECT_TRUE(model.theoreticalNote().contains(QStringLiteral("train.global_batch"))) << model.theoreticalNote().toStdString();
    EXPECT_EQ(model.data(model.index(0, SpanModel::TheoreticalColumn), Qt::ToolTipRole).toString(), model.theoreticalNote());
}

TEST(SpanModel, RanksOfAStageAreListedAsRanges) {
    EXPECT_EQ(SpanModel::rankRanges({3, 0, 1, 2, 8, 10, 11}), QStringLiteral("0-3, 8, 10-11"));
    EXPECT_EQ(SpanModel::rankRanges({}), QString());
    SpanModel model;
    PipelineSpans spans;
    spans.replicas = 4;
    model.setSpans(0, spans.make(0));
    EXPECT_EQ(textAt(model, 1, SpanModel::RanksColumn), QStringLiteral("4-7"));
    EXPECT_EQ(textAt(model, model.overallRow(), SpanModel::RanksColumn), QStringLiteral("16"));
}

TEST(SpanModel, OutOfOrderSpansAreReported) {
    std::vector<SpanEvent> spans = PipelineSpans{}.make(10);
    for (SpanEvent& s : spans) {
        // Stage 1's backward of micro-batch 2 moved before its forward.
        if (s.stage == 1 && s.microbatch == 2 && s.kind == "B") {
            s.end = s.start - 0.05;
            s.start = s.end - 0.001;
        }
    }
    SpanModel model;
    model.setSchedule(schedule(4, 8));
    model.setSpans(10, spans);
    ASSERT_EQ(model.orderProblems().size(), 1u);
    EXPECT_NE(model.orderProblems()[0].find("stage 1 micro-batch 2"), std::string::npos) << model.orderProblems()[0];
}

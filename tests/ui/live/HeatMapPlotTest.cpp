#include "ui/plots/HeatMapPlot.h"

#include "ui/models/DeviceGridModel.h"

#include "tests/ui/live/LiveTestSupport.h"
#include "ui/models/RankActivityPalette.h"
#include "ui/plots/PlotExport.h"

#include <QTest>
#include <qcustomplot.h>

#include <gtest/gtest.h>

#include <cmath>

namespace parallax {
namespace {

using test::cpuSample;
using test::rankStep;

bool near(const QColor& a, const QColor& b, int tolerance = 3) {
    return std::abs(a.red() - b.red()) <= tolerance && std::abs(a.green() - b.green()) <= tolerance &&
           std::abs(a.blue() - b.blue()) <= tolerance;
}

// Right click exports the map: its cells as CSV, one column per rank.
TEST(HeatMapPlotTest, ExportsItsCellsAsCsv) {
    DeviceGridModel model;
    model.setRankHosts({"node0", "node0"});
    std::vector<RankStepEvent> rows;
    for (int64_t s = 0; s < 3; ++s) {
        rows.push_back(rankStep(0, s, 75, 25));
        rows.push_back(rankStep(1, s, 100, 0));
    }
    model.addRankSteps(rows, true);
    HeatMapPlot plot;
    plot.resize(400, 200);
    plot.setModel(&model);
    plot.rebuildNow();
    auto* exporter = plot.findChild<PlotExport*>();
    ASSERT_NE(exporter, nullptr) << "no export menu on the heat map";
    const PlotTable t = exporter->table();
    EXPECT_EQ(t.header, (QStringList{QStringLiteral("step"), QStringLiteral("rank 0"), QStringLiteral("rank 1")}));
    ASSERT_EQ(t.rows.size(), 3u);
    EXPECT_EQ(t.rows[0][1], QStringLiteral("75"));
    EXPECT_EQ(t.rows[2][2], QStringLiteral("100"));
}

// Rank 1 computes every step (the straggler), rank 0 waits 40% of it; rank 0's rows of steps
// 4..6 reached the store late and are not there yet.
TEST(HeatMapPlotTest, ARankByStepMapOfTheComputeShareWithoutGaps) {
    DeviceGridModel model;
    {
        HeatMapPlot empty;
        empty.setModel(&model);
        empty.rebuildNow();
        EXPECT_EQ(empty.mode(), HeatMapPlot::Mode::Empty);
        EXPECT_EQ(empty.customPlot()->xAxis->label(), QStringLiteral("no rank steps or device samples yet"));
    }
    model.setRankHosts({"node0", "node0"});
    std::vector<RankStepEvent> rows;
    for (int64_t s = 0; s < 20; ++s) {
        if (s < 4 || s > 6) rows.push_back(rankStep(0, s, 60, 40));
        rows.push_back(rankStep(1, s, 100, 0));
    }
    model.addRankSteps(rows, true);
    HeatMapPlot plot;
    plot.resize(600, 300);
    plot.setModel(&model);
    plot.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&plot));
    plot.rebuildNow();
    ASSERT_EQ(plot.mode(), HeatMapPlot::Mode::Steps);
    EXPECT_EQ(plot.customPlot()->xAxis->label(), QStringLiteral("step"));
    ASSERT_EQ(plot.rows(), 2);
    ASSERT_EQ(plot.columns(), 20); // one column a step: the map is wide enough
    for (int c = 0; c < plot.columns(); ++c) {
        EXPECT_NEAR(plot.cellValue(c, 0), 60.0, 1e-4) << "step " << c << " of rank 0 has no gap";
        EXPECT_NEAR(plot.cellValue(c, 1), 100.0, 1e-4);
    }
    // The grid's colours, on a fixed 0..100% scale with its legend.
    EXPECT_TRUE(near(plot.cellColor(0, 0), RankActivityPalette::color(0.6))) << plot.cellColor(0, 0).name().toStdString();
    EXPECT_TRUE(near(plot.cellColor(0, 1), RankActivityPalette::color(1.0))) << plot.cellColor(0, 1).name().toStdString();
    EXPECT_TRUE(near(plot.scaleColor(0), RankActivityPalette::color(0.0)));
    EXPECT_TRUE(plot.scaleLabel().startsWith(QStringLiteral("compute %"))) << plot.scaleLabel().toStdString();

    // Many steps: whole steps per column, still no gaps.
    rows.clear();
    for (int64_t s = 20; s < 5000; ++s) {
        rows.push_back(rankStep(0, s, 60, 40));
        if (s % 7 == 0) rows.push_back(rankStep(1, s, 100, 0));
    }
    model.addRankSteps(rows, false);
    plot.rebuildNow();
    ASSERT_LE(plot.columns(), HeatMapPlot::kMaxColumns);
    for (int c = 0; c < plot.columns(); ++c) {
        EXPECT_FALSE(std::isnan(plot.cellValue(c, 0))) << c;
        EXPECT_FALSE(std::isnan(plot.cellValue(c, 1))) << c;
    }
}

// A run without rank_steps: utilization over time, sparse samples span to the next one, and a CPU
// rank's 200% on 2 threads is a full cell on the same 0..100% scale.
TEST(HeatMapPlotTest, WithoutStepsSamplesFillTheirTimeOnAScaleOfTheThreads) {
    DeviceGridModel model;
    model.setCpuThreadsPerRank(2);
    std::vector<DeviceEvent> samples;
    for (int i = 0; i < 10; ++i) {
        samples.push_back(cpuSample(0, 200, 1.7e9 + i * 10.0)); // one sample per 10 s
        samples.push_back(cpuSample(1, 100, 1.7e9 + i * 10.0 + 5));
    }
    model.addSamples(samples, true);
    HeatMapPlot plot;
    plot.resize(900, 300);
    plot.setModel(&model);
    plot.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&plot));
    plot.rebuildNow();
    ASSERT_EQ(plot.mode(), HeatMapPlot::Mode::Time);
    ASSERT_EQ(plot.rows(), 2);
    ASSERT_GT(plot.columns(), 20);
    int cells = 0;
    for (int c = 0; c < plot.columns(); ++c) {
        const double v0 = plot.cellValue(c, 0);
        EXPECT_FALSE(std::isnan(v0)) << "rank 0, column " << c;
        if (!std::isnan(v0)) {
            EXPECT_NEAR(v0, 100.0, 1e-9);
        }
        const double v1 = plot.cellValue(c, 1);
        if (!std::isnan(v1)) {
            EXPECT_NEAR(v1, 50.0, 1e-9);
            ++cells;
        }
    }
    // Rank 1 starts 5 s later, so only its first columns are empty; both are current to the end.
    EXPECT_GT(cells, plot.columns() * 9 / 10);
    EXPECT_TRUE(plot.scaleLabel().contains(QStringLiteral("2 threads"))) << plot.scaleLabel().toStdString();
}

} // namespace
} // namespace parallax

namespace parallax {
namespace {

// The pixels of `plot`'s picture within `tolerance` of `colour`.
int pixelsOf(HeatMapPlot& plot, const QColor& colour) {
    const QImage image = plot.customPlot()->toPixmap(400, 200).toImage();
    int count = 0;
    for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x) count += near(image.pixelColor(x, y), colour, 6);
    return count;
}

// A run of one rank (one row) and a run of one step (one column) are drawn, not an empty frame.
TEST(HeatMapPlotTest, ASingleRankAndASingleStepAreDrawn) {
    DeviceGridModel model;
    model.setRankHosts({"node0"});
    std::vector<RankStepEvent> rows;
    for (int64_t s = 0; s < 12; ++s) rows.push_back(rankStep(0, s, 70, 30));
    model.addRankSteps(rows, true);
    HeatMapPlot plot;
    plot.resize(400, 200);
    plot.setModel(&model);
    plot.rebuildNow();
    ASSERT_EQ(plot.rows(), 1);
    ASSERT_GE(plot.columns(), 2);
    EXPECT_NEAR(plot.cellValue(plot.columns() - 1, 0), 70.0, 1e-4);
    const QColor seventy = RankActivityPalette::color(0.7);
    EXPECT_GT(pixelsOf(plot, seventy), 2000) << "the rank's row is drawn";
    const PlotTable t = plot.findChild<PlotExport*>()->table();
    EXPECT_EQ(t.header, (QStringList{QStringLiteral("step"), QStringLiteral("rank 0")}));
    ASSERT_EQ(t.rows.size(), static_cast<size_t>(plot.columns()));
    EXPECT_EQ(t.rows[0][1], QStringLiteral("70"));

    DeviceGridModel oneStep;
    oneStep.setRankHosts({"node0", "node0"});
    oneStep.addRankSteps({rankStep(0, 0, 70, 30), rankStep(1, 0, 70, 30)}, true);
    plot.setModel(&oneStep);
    plot.rebuildNow();
    ASSERT_EQ(plot.columns(), 1);
    ASSERT_EQ(plot.rows(), 2);
    EXPECT_GT(pixelsOf(plot, seventy), 2000) << "the step's column is drawn";
}

// 1,024 ranks in a map 95 pixels high: ranks share rows, and in each cell the rank farthest from
// the median shows, so the straggler (rank 517, computing 95%) and the rank that stopped at step
// 30 (rank 900) are drawn, where one row per rank would have dropped nine ranks in ten.
TEST(HeatMapPlotTest, AThousandRanksShareRowsWithoutLosingTheOutliers) {
    DeviceGridModel model;
    model.setRankHosts(std::vector<std::string>(1024, "node"));
    std::vector<RankStepEvent> rows;
    for (int64_t s = 0; s < 60; ++s)
        for (int r = 0; r < 1024; ++r) {
            if (r == 900 && s >= 30) continue;
            rows.push_back(r == 517 ? rankStep(r, s, 95, 5) : rankStep(r, s, 40, 60));
        }
    model.addRankSteps(rows, true);
    HeatMapPlot plot;
    plot.resize(400, 95);
    plot.setModel(&model);
    plot.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&plot));
    plot.rebuildNow();
    ASSERT_GT(plot.ranksPerRow(), 1);
    EXPECT_LE(plot.rows() * 2, plot.customPlot()->axisRect()->height() + 2 * plot.ranksPerRow());
    EXPECT_EQ(plot.rows(), (1024 + plot.ranksPerRow() - 1) / plot.ranksPerRow());
    const int straggler = 517 / plot.ranksPerRow(), stopped = 900 / plot.ranksPerRow();
    for (int c = 0; c < plot.columns(); ++c) {
        EXPECT_NEAR(plot.cellValue(c, straggler), 95.0, 1e-4) << "column " << c;
        EXPECT_NEAR(plot.cellValue(c, straggler == 0 ? 1 : 0), 40.0, 1e-4) << "column " << c;
    }
    EXPECT_NEAR(plot.cellValue(0, stopped), 40.0, 1e-4);
    EXPECT_TRUE(std::isnan(plot.cellValue(plot.columns() - 1, stopped))) << "the row of the rank that stopped ends";
    // The axis reads rank indices; the tooltip says how the rows are made.
    EXPECT_EQ(plot.customPlot()->yAxis->range().upper, 1023.5);
    EXPECT_TRUE(plot.toolTip().contains(QStringLiteral("ranks a row"))) << plot.toolTip().toStdString();
}

} // namespace
} // namespace parallax

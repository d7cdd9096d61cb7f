#include "ui/widgets/WindowFit.h"
#include "ui/widgets/DeviceGridDiagram.h"
#include "ui/widgets/MemoryBar.h"
#include "ui/widgets/TableExport.h"
#include "ui/models/TableRoles.h"

#include <QAction>
#include <QFile>
#include <QImage>
#include <QPainter>
#include <QSortFilterProxyModel>
#include <QStandardItemModel>
#include <QTableView>
#include <QTemporaryDir>

#include <gtest/gtest.h>

#include <set>

using namespace parallax;

TEST(DeviceGridDiagram, NumbersRanksTensorFastestThenDataThenPipeline) {
    // dp 2 x tp 2 x pp 2: ranks 0,1 = (dp0, stage0), 2,3 = (dp1, stage0), 4..7 stage 1.
    EXPECT_EQ(DeviceGridDiagram::rankOf({0, 1, 0}, 2, 2), 1);
    EXPECT_EQ(DeviceGridDiagram::rankOf({1, 0, 0}, 2, 2), 2);
    EXPECT_EQ(DeviceGridDiagram::rankOf({0, 0, 1}, 2, 2), 4);
    for (int64_t r = 0; r < 8; ++r) {
        const auto c = DeviceGridDiagram::coordinatesOf(r, 2, 2);
        EXPECT_EQ(DeviceGridDiagram::rankOf(c, 2, 2), r);
    }
}

TEST(DeviceGridDiagram, DrawsReplicasSideBySideAndStagesInRows) {
    DeviceGridDiagram grid;
    grid.resize(500, 200);
    grid.setLayout(2, 2, 2);
    const QRectF r0 = grid.cellRect(0), r1 = grid.cellRect(1), r2 = grid.cellRect(2), r4 = grid.cellRect(4);
    EXPECT_DOUBLE_EQ(r1.top(), r0.top());
    EXPECT_DOUBLE_EQ(r1.left(), r0.right()); // a tp group's cells touch
    EXPECT_GT(r2.left(), r1.right());        // the next replica after a gap
    EXPECT_GT(r4.top(), r0.bottom());        // stage 1 below stage 0
    EXPECT_EQ(grid.rankAt(r2.center()), 2);
    EXPECT_NE(DeviceGridDiagram::stageColor(0), DeviceGridDiagram::stageColor(1));

    // The cells are painted in their stage's color.
    QImage image(grid.size(), QImage::Format_ARGB32);
    image.fill(Qt::white);
    grid.render(&image);
    EXPECT_EQ(image.pixelColor(r4.center().toPoint() + QPoint(0, int(r4.height() / 3))).rgb(),
              DeviceGridDiagram::stageColor(1).rgb());

    grid.setLayout(64, 8, 16); // 8192 ranks: too many to draw
    EXPECT_TRUE(grid.cellRect(0).isNull());
}

TEST(MemoryBar, SumsItsPartsAgainstTheCapacity) {
    MemoryBar bar;
    bar.resize(400, bar.sizeHint().height());
    const QVector<QColor> c = MemoryBar::partColors();
    bar.setSegments({{QStringLiteral("weights"), 4e9, c[0]}, {QStringLiteral("optimizer"), 8e9, c[2]}});
    bar.setCapacity(16e9, QStringLiteral("per GPU"));
    EXPECT_DOUBLE_EQ(bar.total(), 12e9);
    EXPECT_FALSE(bar.overCapacity());
    bar.setCapacity(10e9, QStringLiteral("per GPU"));
    EXPECT_TRUE(bar.overCapacity());
    EXPECT_TRUE(bar.toolTip().contains(QStringLiteral("weights")));
}

// Every table's Copy and Export CSV: the selected cells tab-separated under their headers; the rows
// the view shows (its sort order, without hidden columns) as CSV with the header, cells with commas
// and quotes quoted.
TEST(TableExport, CopiesTheSelectionAndExportsTheRowsShownAsCsv) {
    QStandardItemModel model(3, 3);
    model.setHorizontalHeaderLabels({QStringLiteral("run"), QStringLiteral("note"), QStringLiteral("hidden")});
    const char* notes[] = {"plain", "with, comma", "say \"hi\""};
    for (int r = 0; r < 3; ++r) {
        model.setItem(r, 0, new QStandardItem(QString::number(3 - r)));
        model.setItem(r, 1, new QStandardItem(QString::fromUtf8(notes[r])));
        model.setItem(r, 2, new QStandardItem(QStringLiteral("x")));
    }
    QSortFilterProxyModel sorted;
    sorted.setSourceModel(&model);
    sorted.sort(0); // runs 1, 2, 3: the last source row first
    QTableView view;
    view.setModel(&sorted);
    view.setColumnHidden(2, true);
    TableExport* exporter = TableExport::install(&view, QStringLiteral("runs"));
    EXPECT_EQ(view.contextMenuPolicy(), Qt::ActionsContextMenu);
    EXPECT_TRUE(view.actions().contains(exporter->copyAction()));
    EXPECT_EQ(exporter->copyAction()->shortcut(), QKeySequence(QKeySequence::Copy));

    view.selectionModel()->select(QItemSelection(sorted.index(0, 0), sorted.index(1, 1)), QItemSelectionModel::Select);
    EXPECT_EQ(exporter->selectionText(), QStringLiteral("run\tnote\n1\tsay \"hi\"\n2\twith, comma\n"));

    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("t.csv"));
    QString error;
    ASSERT_TRUE(exporter->saveCsv(path, &error)) << error.toStdString();
    QFile file(path);
    ASSERT_TRUE(file.open(QIODevice::ReadOnly));
    EXPECT_EQ(QString::fromUtf8(file.readAll()),
              QStringLiteral("run,note\n1,\"say \"\"hi\"\"\"\n2,\"with, comma\"\n3,plain\n"));
    EXPECT_FALSE(exporter->saveCsv(dir.filePath(QStringLiteral("no/such/folder/t.csv")), &error));
    EXPECT_TRUE(error.contains(QStringLiteral("no/such/folder"))) << error.toStdString();
}

// Export CSV writes a model's raw values where it gives them (RawValueRole): numbers in their
// shortest exact form, a missing value as an empty cell, a column of two fields as two columns named
// by the header. Copy keeps the text the table shows.
TEST(TableExport, ExportsRawValuesWhereTheModelGivesThem) {
    QStandardItemModel model(2, 3);
    model.setHorizontalHeaderLabels({QStringLiteral("Steps"), QStringLiteral("Duration"), QStringLiteral("Name")});
    model.setHeaderData(0, Qt::Horizontal, QStringList{QStringLiteral("steps_done"), QStringLiteral("steps_total")}, RawValueRole);
    model.setHeaderData(1, Qt::Horizontal, QStringLiteral("duration_s"), RawValueRole);
    const auto cell = [](const QString& shown, const QVariant& raw) {
        auto* item = new QStandardItem(shown);
        item->setData(raw, RawValueRole);
        return item;
    };
    model.setItem(0, 0, cell(QStringLiteral("60 / 60"), QVariantList{qlonglong(60), qlonglong(60)}));
    model.setItem(0, 1, cell(QStringLiteral("1m 07s"), 67.1));
    model.setItem(0, 2, new QStandardItem(QStringLiteral("a")));
    model.setItem(1, 0, cell(QStringLiteral("3"), QVariantList{qlonglong(3), QVariant()}));
    model.setItem(1, 1, cell(QString(), QVariant()));
    model.setItem(1, 2, new QStandardItem(QStringLiteral("b")));
    QTableView view;
    view.setModel(&model);
    TableExport* exporter = TableExport::install(&view, QStringLiteral("runs"));

    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("raw.csv"));
    QString error;
    ASSERT_TRUE(exporter->saveCsv(path, &error)) << error.toStdString();
    QFile file(path);
    ASSERT_TRUE(file.open(QIODevice::ReadOnly));
    EXPECT_EQ(QString::fromUtf8(file.readAll()),
              QStringLiteral("steps_done,steps_total,duration_s,Name\n60,60,67.1,a\n3,,,b\n"));

    view.selectionModel()->select(QItemSelection(model.index(0, 0), model.index(0, 1)), QItemSelectionModel::Select);
    EXPECT_EQ(exporter->selectionText(), QStringLiteral("Steps\tDuration\n60 / 60\t1m 07s\n"));
}

// A window saved at 1440 x 900 (or opened at that default) on a 1280 x 720 screen: it fits the
// screen's free area, where it opened partly off it.
TEST(WindowFit, ASavedGeometryLargerThanTheScreenIsShrunkAndMovedOnIt) {
    const QRect screen(0, 0, 1280, 720 - 32); // a panel takes 32 px
    const QSize minimum(964, 600);
    EXPECT_EQ(fitWindowToScreen(QRect(40, 30, 1440, 900), minimum, screen), QRect(0, 0, 1280, 688));
    // Off to the right and below on a second screen's coordinates: moved back inside, size kept.
    EXPECT_EQ(fitWindowToScreen(QRect(1900, 1000, 1000, 650), minimum, screen), QRect(280, 38, 1000, 650));
    // One that fits stays where it is.
    EXPECT_EQ(fitWindowToScreen(QRect(100, 50, 1000, 600), minimum, screen), QRect(100, 50, 1000, 600));
    // Never below the window's minimum, from the area's top left corner.
    EXPECT_EQ(fitWindowToScreen(QRect(300, 200, 1440, 900), minimum, QRect(0, 0, 800, 500)), QRect(0, 0, 964, 600));
    EXPECT_EQ(fitWindowToScreen(QRect(5, 6, 70, 80), minimum, QRect()), QRect(5, 6, 70, 80)) << "no screen known";
}

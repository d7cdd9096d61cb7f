#include "ui/models/MetricSeries.h"
#include "ui/plots/CurvePlot.h"
#include "ui/plots/PlotExport.h"
#include "ui/models/RunColors.h"

#include <qcustomplot.h>

#include <QApplication>
#include <QClipboard>
#include <QContextMenuEvent>
#include <QFile>
#include <QImage>
#include <QMenu>
#include <QTemporaryDir>
#include <QXmlStreamReader>

#include <gtest/gtest.h>

#include <memory>

using namespace parallax;

namespace {

const QColor kRed(255, 0, 0);
const QColor kBlue(0, 0, 255);

// "rising": 50 points at every step; "even": 25, at the even steps only.
struct TwoCurves {
    std::shared_ptr<MetricSeries> rising = std::make_shared<MetricSeries>();
    std::shared_ptr<MetricSeries> even = std::make_shared<MetricSeries>();
    CurvePlot plot;
    TwoCurves() {
        for (int s = 0; s < 50; ++s) {
            rising->append(s, 1000.0 + s, 100.0 * s, 2.0 * s);
            if (s % 2 == 0) even->append(s, 1000.0 + s, 100.0 * s, 100.0 - s + 0.25);
        }
        plot.addCurve(QStringLiteral("rising"), rising, MetricChannel::Raw, kRed, 3.0);
        plot.addCurve(QStringLiteral("even, sparse"), even, MetricChannel::Raw, kBlue, 3.0);
        plot.setLegendVisible(true);
        plot.resize(420, 300);
        plot.show();
        plot.replotNow();
    }
};

using Save = bool (PlotExport::*)(const QString&, QString*) const;

// The bytes `save` writes to a file of a fresh folder.
QByteArray exported(const PlotExport& exporter, Save save, const QString& name) {
    QTemporaryDir dir;
    const QString path = dir.filePath(name);
    QString error;
    EXPECT_TRUE((exporter.*save)(path, &error)) << error.toStdString();
    QFile f(path);
    EXPECT_TRUE(f.open(QIODevice::ReadOnly)) << path.toStdString();
    return f.readAll();
}

int pixelsOf(const QImage& image, const QColor& color) {
    int n = 0;
    for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x) n += image.pixelColor(x, y).rgb() == color.rgb();
    return n;
}

// Points of every <polyline> or <path> drawn with `stroke`, from the SVG's own attribute or a
// group's around it.
int strokedPoints(const QByteArray& svg, const QString& stroke, bool* wellFormed) {
    QXmlStreamReader xml(svg);
    std::vector<QString> strokes{QString()};
    int points = 0;
    bool root = false;
    while (!xml.atEnd()) {
        xml.readNext();
        if (xml.isStartElement()) {
            if (strokes.size() == 1) root = xml.name() == QStringLiteral("svg");
            const QString own = xml.attributes().value(QStringLiteral("stroke")).toString();
            strokes.push_back(own.isEmpty() ? strokes.back() : own);
            if (strokes.back().compare(stroke, Qt::CaseInsensitive) != 0) continue;
            if (xml.name() == QStringLiteral("polyline")) {
                const QString p = xml.attributes().value(QStringLiteral("points")).toString().simplified();
                points += int(p.split(QChar(' '), Qt::SkipEmptyParts).size());
            } else if (xml.name() == QStringLiteral("path")) {
                const QString d = xml.attributes().value(QStringLiteral("d")).toString();
                points += int(d.count(QChar('L')) + d.count(QChar('M')));
            }
        } else if (xml.isEndElement()) {
            strokes.pop_back();
        }
    }
    *wellFormed = !xml.hasError() && root;
    return points;
}

} // namespace

TEST(PlotExport, PngIsThePlotAtItsSizeWithItsCurves) {
    TwoCurves t;
    QImage image;
    ASSERT_TRUE(image.loadFromData(exported(*t.plot.exporter(), &PlotExport::savePng, "plot.png"), "PNG"));
    EXPECT_EQ(image.size(), t.plot.customPlot()->size());
    EXPECT_EQ(image.size(), QSize(420, 300));
    // Both curves, in their colours (3 px wide, so their middle is the exact colour).
    EXPECT_GT(pixelsOf(image, kRed), 100);
    EXPECT_GT(pixelsOf(image, kBlue), 100);
}

TEST(PlotExport, SvgIsXmlWithEachCurveAsAPath) {
    TwoCurves t;
    const QByteArray svg = exported(*t.plot.exporter(), &PlotExport::saveSvg, "plot.svg");
    bool wellFormed = false;
    // Every point of each curve is a vertex of its path: vectors, not a picture of them.
    EXPECT_GE(strokedPoints(svg, QStringLiteral("#ff0000"), &wellFormed), 50);
    EXPECT_TRUE(wellFormed) << svg.left(400).toStdString();
    EXPECT_GE(strokedPoints(svg, QStringLiteral("#0000ff"), &wellFormed), 25);
    EXPECT_FALSE(svg.contains("<image")) << "the curves were drawn as a bitmap";
    EXPECT_TRUE(svg.contains("width=\"420")) << svg.left(400).toStdString();
}

TEST(PlotExport, CsvHasAColumnPerCurveAndARowPerStep) {
    TwoCurves t;
    const QStringList lines = QString::fromUtf8(exported(*t.plot.exporter(), &PlotExport::saveCsv, "plot.csv"))
                                  .split(QChar('\n'), Qt::SkipEmptyParts);
    ASSERT_EQ(lines.size(), 51);
    // A name with a comma is quoted.
    EXPECT_EQ(lines[0], QStringLiteral("step,rising,\"even, sparse\""));
    EXPECT_EQ(lines[1], QStringLiteral("0,0,100.25"));
    EXPECT_EQ(lines[2], QStringLiteral("1,2,")); // the sparse curve has no step 1
    EXPECT_EQ(lines[50], QStringLiteral("49,98,"));

    // On the tokens axis the x column is the tokens; a hidden curve is left out.
    t.plot.setAxis(MetricAxis::Tokens);
    t.plot.setCurveVisible(2, false);
    const PlotTable table = t.plot.table();
    EXPECT_EQ(table.header, (QStringList{"tokens", "rising"}));
    ASSERT_EQ(table.rows.size(), 50u);
    EXPECT_EQ(table.rows[3], (QStringList{"300", "6"}));
}

TEST(PlotExport, MenuOffersTheExportsAndCopiesTheImage) {
    TwoCurves t;
    std::unique_ptr<QMenu> menu(t.plot.exporter()->createMenu(&t.plot));
    QStringList texts;
    for (QAction* a : menu->actions())
        if (!a->isSeparator()) texts << a->text();
    EXPECT_EQ(texts, (QStringList{"Export PNG…", "Export SVG…", "Export CSV…", "Copy image"}));
    EXPECT_EQ(t.plot.customPlot()->contextMenuPolicy(), Qt::CustomContextMenu);

    // A right click on the plot opens it.
    t.plot.window()->activateWindow();
    QContextMenuEvent click(QContextMenuEvent::Mouse, QPoint(60, 60), t.plot.customPlot()->mapToGlobal(QPoint(60, 60)));
    QApplication::sendEvent(t.plot.customPlot(), &click);
    QMenu* opened = nullptr;
    for (QWidget* w : QApplication::topLevelWidgets())
        if (auto* m = qobject_cast<QMenu*>(w); m && m->isVisible()) opened = m;
    ASSERT_NE(opened, nullptr);
    EXPECT_EQ(opened->actions().size(), menu->actions().size());
    opened->close();

    menu->actions().last()->trigger();
    const QImage copied = QApplication::clipboard()->image();
    EXPECT_EQ(copied.size(), QSize(420, 300));
    EXPECT_GT(pixelsOf(copied.convertToFormat(QImage::Format_ARGB32), kRed), 100);
}

TEST(PlotExport, AnyWidgetExportsThroughItsOwnPainting) {
    // A widget without a vector painter of its own renders itself (PNG and SVG alike).
    QWidget w;
    w.resize(120, 80);
    w.setAutoFillBackground(true);
    QPalette p = w.palette();
    p.setColor(QPalette::Window, kBlue);
    w.setPalette(p);
    PlotExport exporter(&w, {}, [] { return PlotTable{{"x", "y"}, {{"1", "2"}}}; }, QStringLiteral("w"));
    const QImage image = exporter.image();
    EXPECT_EQ(image.size(), QSize(120, 80));
    EXPECT_EQ(image.pixelColor(60, 40).rgb(), kBlue.rgb());
    EXPECT_EQ(exporter.table().toCsv(), QByteArray("x,y\n1,2\n"));
}

TEST(CurvePlot, LegendSitsAboveTheAxesAndCoversNoPoint) {
    // A rising curve fills the corner where a legend inside the axes would sit (top right).
    TwoCurves t;
    QCustomPlot* qcp = t.plot.customPlot();
    ASSERT_TRUE(qcp->legend->visible());
    EXPECT_EQ(t.plot.legendNames(), (QStringList{"rising", "even, sparse"}));
    const QRect legend = qcp->legend->outerRect();
    const QRect axes = qcp->axisRect()->rect();
    EXPECT_FALSE(legend.isEmpty());
    EXPECT_LE(legend.bottom(), axes.top()) << "the legend lies over the axes";
    int points = 0;
    for (QCPGraph* g : {qcp->graph(0), qcp->graph(1)}) {
        for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it) {
            const QPointF px(qcp->xAxis->coordToPixel(it->key), qcp->yAxis->coordToPixel(it->value));
            EXPECT_FALSE(legend.contains(px.toPoint())) << it->key << ", " << it->value;
            ++points;
        }
    }
    EXPECT_EQ(points, 75);

    // The items share a line when the width holds them, side by side at the left, and wrap when
    // the width does not hold them.
    EXPECT_EQ(qcp->legend->item(0)->outerRect().top(), qcp->legend->item(1)->outerRect().top());
    EXPECT_LE(qcp->legend->item(1)->outerRect().left() - qcp->legend->item(0)->outerRect().right(),
              qcp->legend->columnSpacing() + 2);
    t.plot.resize(150, 300);
    t.plot.replotNow();
    EXPECT_LT(qcp->legend->item(0)->outerRect().top(), qcp->legend->item(1)->outerRect().top());
    t.plot.resize(420, 300);
    t.plot.replotNow();
    EXPECT_EQ(qcp->legend->item(0)->outerRect().top(), qcp->legend->item(1)->outerRect().top());

    // Hidden, it gives its row back to the axes; shown again, it is above them again.
    const int withLegend = axes.height();
    t.plot.setLegendVisible(false);
    t.plot.replotNow();
    EXPECT_GT(qcp->axisRect()->rect().height(), withLegend);
    t.plot.setTitle(QStringLiteral("Loss"));
    t.plot.setLegendVisible(true);
    t.plot.replotNow();
    EXPECT_LE(qcp->legend->outerRect().bottom(), qcp->axisRect()->rect().top());
}

TEST(CurvePlot, CurvesOutOfTheLegendStillDrawAndExport) {
    auto s = std::make_shared<MetricSeries>(MetricSmoothing::ema(0.5));
    for (int i = 0; i < 4; ++i) s->append(i, i, i, i % 2 ? 1.0 : 3.0);
    CurvePlot plot;
    plot.addCurve(QStringLiteral("loss (raw)"), s, MetricChannel::Raw, kRed, 1.0, false);
    plot.addCurve(QStringLiteral("loss"), s, MetricChannel::Smoothed, kBlue, 2.0);
    plot.setLegendVisible(true);
    plot.replotNow();
    EXPECT_EQ(plot.legendNames(), QStringList{QStringLiteral("loss")});
    EXPECT_EQ(plot.curveNames(), (QStringList{"loss (raw)", "loss"}));
    EXPECT_EQ(plot.curveColor(QStringLiteral("loss")), kBlue);
    const PlotTable table = plot.table();
    EXPECT_EQ(table.header, (QStringList{"step", "loss (raw)", "loss"}));
    ASSERT_EQ(table.rows.size(), 4u);
    EXPECT_EQ(table.rows[1][1], QStringLiteral("1"));
    EXPECT_EQ(table.rows[1][2], QString::number(s->smoothed(1), 'g', QLocale::FloatingPointShortest));
    EXPECT_NE(table.rows[1][1], table.rows[1][2]);
}

TEST(RunColors, ARunKeepsItsColourAsOthersComeAndGo) {
    RunColors colors;
    const std::vector<QColor> first = colors.assign({7});
    const QColor seven = first[0];
    // A run with a lower id checked: the list order changes, run 7's colour does not.
    std::vector<QColor> c = colors.assign({3, 7});
    EXPECT_EQ(c[1], seven);
    EXPECT_NE(c[0], seven);
    const QColor three = c[0];
    c = colors.assign({3, 5, 7});
    EXPECT_EQ(c[0], three);
    EXPECT_EQ(c[2], seven);
    const QColor five = c[1];
    EXPECT_NE(five, three);
    EXPECT_NE(five, seven);
    // 3 leaves and comes back: nobody took its colour, so it has it again.
    c = colors.assign({5, 7});
    EXPECT_EQ(c, (std::vector<QColor>{five, seven}));
    c = colors.assign({3, 5, 7});
    EXPECT_EQ(c, (std::vector<QColor>{three, five, seven}));
    // 3 leaves, 9 comes and takes the free colour; 3 back takes another, nobody changes.
    colors.assign({5, 7});
    c = colors.assign({5, 7, 9});
    EXPECT_EQ(c[2], three);
    c = colors.assign({3, 5, 7, 9});
    EXPECT_EQ(c[1], five);
    EXPECT_EQ(c[2], seven);
    EXPECT_EQ(c[3], three);
    EXPECT_NE(c[0], three);
    EXPECT_NE(c[0], five);
    EXPECT_NE(c[0], seven);
}

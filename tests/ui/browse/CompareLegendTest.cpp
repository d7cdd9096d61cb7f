#include "BrowseTestSupport.h"

#include "ui/MainWindow.h"
#include "ui/models/RunCheckModel.h"
#include "ui/models/RunListModel.h"
#include "ui/pages/ComparePage.h"
#include "ui/plots/CurvePlot.h"

#include <qcustomplot.h>

#include <QSize>

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

using namespace parallax;
using namespace parallax::test;

namespace {

// Twelve runs with names as long as people give them (one longer than the plot at 800 x 600); six
// of them continue others (Resume), so that their titles also name every run they continue.
struct LongNamedRuns {
    CraftedStore store;
    std::vector<int64_t> ids;
    std::map<int64_t, QString> titles; // what the legend must show for each run

    LongNamedRuns() {
        const char* names[] = {
            "qwen2.5-vl-72b-instruct-sft-llava-onevision-si-3.2m-dp8-tp4-pp2-zero1-bf16-lr1e-5-warmup3pct-cosine-seed7",
            "mmdit-fashion-mnist-dp2-pp2-1f1b-micro8-warmup200-seed1234",
            "gpt-1b-openwebtext-dp8-zero3-bucket50-ckpt-every-500",
            "qwen-image-lora-r64-alpha128-diffsynth-captions-bf16",
            "gpt-tiny",
            "vlm-base-sharegpt4v-zero1-grad-accum-16-cosine",
        };
        for (const char* name : names) add(tinySpec(name));
        // Two runs resumed twice each: "#9 ... (continues #7, #8)".
        for (const char* name : {"qwen2.5-vl-7b-resume-after-oom-dp4-tp2-zero2", "mmdit-base-elastic-2-nodes-lost-host"}) {
            const int64_t root = add(tinySpec(name), RunState::Failed);
            const int64_t second = continuation(name, root, 10, RunState::Failed, QStringLiteral("#%1").arg(root));
            continuation(name, second, 20, RunState::Succeeded, QStringLiteral("#%1, #%2").arg(root).arg(second));
        }
    }

    int64_t add(const RunSpec& spec, RunState state = RunState::Succeeded) {
        const int64_t id = store.addRun(spec, state, 30, 4.0 + double(ids.size()));
        ids.push_back(id);
        titles[id] = QStringLiteral("#%1 %2").arg(id).arg(QString::fromStdString(spec.name));
        return id;
    }

    int64_t continuation(const char* name, int64_t parent, int64_t fromStep, RunState state,
                         const QString& continues) {
        const int64_t id = store.addContinuation(tinySpec(name), parent, fromStep, state, 30);
        ids.push_back(id);
        titles[id] = QStringLiteral("#%1 %2 (continues %3)").arg(id).arg(QString::fromLatin1(name), continues);
        return id;
    }
};

// What the legend draws, read from its items: each item's text and the room it draws in (its
// place, as wide as its icon and text need: a squeezed item draws past its place). A wrapped
// legend's grid has empty cells after its last item, hence the skipped nulls.
struct LegendEntry {
    QString text;
    QRect drawn;
};

std::vector<LegendEntry> legendEntries(const CurvePlot& plot) {
    std::vector<LegendEntry> out;
    const QCPLegend* legend = plot.customPlot()->legend;
    for (int i = 0; i < legend->elementCount(); ++i) {
        auto* item = qobject_cast<QCPPlottableLegendItem*>(legend->elementAt(i));
        if (!item) continue;
        const QCPLayoutElement* element = item;
        QRect drawn = item->outerRect();
        drawn.setWidth(std::max(drawn.width(), element->minimumOuterSizeHint().width()));
        out.push_back({item->plottable()->name(), drawn});
    }
    return out;
}

// `shown` is `title` whole, or with its middle left out where the plot is too narrow for it, the
// run's number still at its start.
bool showsTitle(const QString& shown, const QString& title, int64_t id) {
    if (shown == title) return true;
    if (!shown.startsWith(QStringLiteral("#%1 ").arg(id))) return false;
    for (const QString& ellipsis : {QString(QChar(0x2026)), QStringLiteral("...")}) {
        const qsizetype cut = shown.indexOf(ellipsis);
        if (cut < 0) continue;
        const QString head = shown.left(cut);
        const QString tail = shown.mid(cut + ellipsis.size());
        return title.startsWith(head) && title.endsWith(tail) && head.size() + tail.size() < title.size();
    }
    return false;
}

// Ticks or unticks run `id` the way a click on its box in the list does.
bool tick(ComparePage& page, int64_t id, bool on) {
    RunCheckModel* model = page.pickModel();
    for (int row = 0; row < model->rowCount(); ++row) {
        const QModelIndex box = model->index(row, 0);
        if (box.data(RunListModel::RunIdRole).toLongLong() == id)
            return model->setData(box, on ? Qt::Checked : Qt::Unchecked, Qt::CheckStateRole);
    }
    return false;
}

bool loaded(const ComparePage& page, const QList<qint64>& ticked) {
    if (page.loadedRuns().size() != size_t(ticked.size())) return false;
    for (const CompareRun& r : page.loadedRuns())
        if (!ticked.contains(r.record.id)) return false;
    return true;
}

// The window at `size`, drawn the way it draws itself (queued replots), then once more at once.
void showAt(MainWindow& w, QSize size) {
    w.resize(size);
    QTest::qWait(2 * CurvePlot::kRedrawIntervalMs);
    w.comparePage()->plot()->replotNow();
}

// Every ticked run has one legend entry naming it, inside the plot, whole where the window is wide;
// no other entry.
void expectLegendNames(const MainWindow& w, const LongNamedRuns& runs, const QList<qint64>& ticked) {
    const CurvePlot* plot = w.comparePage()->plot();
    const std::vector<LegendEntry> entries = legendEntries(*plot);
    const QString at = QStringLiteral("window %1x%2, plot %3 wide, %4 ticked")
                           .arg(w.width())
                           .arg(w.height())
                           .arg(plot->customPlot()->width())
                           .arg(ticked.size());
    EXPECT_EQ(entries.size(), size_t(ticked.size())) << at.toStdString();
    const QRect inside = plot->customPlot()->rect();
    for (qint64 id : ticked) {
        const QString& title = runs.titles.at(id);
        int found = 0;
        for (const LegendEntry& e : entries) {
            if (!showsTitle(e.text, title, id)) continue;
            ++found;
            // Left out only where the plot is too narrow for the whole name.
            if (w.width() >= 1920) EXPECT_EQ(e.text, title) << at.toStdString();
            EXPECT_TRUE(inside.contains(e.drawn)) << at.toStdString() << ": \"" << e.text.toStdString()
                                                  << "\" drawn past the plot's edge";
        }
        EXPECT_EQ(found, 1) << at.toStdString() << ": " << title.toStdString();
    }
}

} // namespace

// Ticking runs until the legend wraps onto more lines (sooner with long names) and resizing the
// window while they are ticked must neither crash nor leave a run out of the legend or cut.
TEST(CompareLegend, NamesEveryTickedRunAtEveryWindowSize) {
    IsolatedSettings settings;
    LongNamedRuns runs;
    MainWindow w(runs.store.qpath());
    w.resize(800, 600);
    w.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
    w.showPage(MainWindow::Compare);
    ComparePage& page = *w.comparePage();
    ASSERT_TRUE(waitFor([&] { return w.runsModel()->rowCount() == int(runs.ids.size()); }));

    const QList<QSize> sizes{{800, 600}, {1280, 720}, {1920, 1080}};
    QList<qint64> ticked;
    for (int64_t id : runs.ids) {
        ASSERT_TRUE(tick(page, id, true));
        ticked << id;
        ASSERT_TRUE(waitFor([&] { return loaded(page, ticked); })) << ticked.size() << " ticked";
        for (const QSize& size : sizes) {
            showAt(w, size);
            expectLegendNames(w, runs, ticked);
        }
    }
    // Back and forth between the sizes with all twelve ticked.
    for (const QSize& size : {QSize(1920, 1080), QSize(800, 600), QSize(1280, 720), QSize(800, 600), QSize(1920, 1080)}) {
        showAt(w, size);
        expectLegendNames(w, runs, ticked);
    }
    // Unticked again in the order ticked: items leave the first lines of the legend.
    for (int64_t id : runs.ids) {
        ASSERT_TRUE(tick(page, id, false));
        ticked.removeOne(id);
        ASSERT_TRUE(waitFor([&] { return loaded(page, ticked); })) << ticked.size() << " ticked";
        showAt(w, sizes[ticked.size() % sizes.size()]);
        expectLegendNames(w, runs, ticked);
    }
    EXPECT_TRUE(legendEntries(*page.plot()).empty());
}

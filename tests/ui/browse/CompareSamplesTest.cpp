#include "BrowseTestSupport.h"

#include "tests/support/SampleRows.h"
#include "ui/models/RunListModel.h"
#include "ui/models/RunSamplesModel.h"
#include "ui/models/StoreWatcher.h"
#include "ui/pages/ComparePage.h"
#include "ui/pages/CompareSamplesPanel.h"
#include "ui/widgets/SampleImage.h"

#include <QLabel>
#include <QSlider>
#include <QTabWidget>

#include <gtest/gtest.h>

using namespace parallax;
using namespace parallax::test;

namespace {

void addSamples(CraftedStore& s, int64_t run, const std::vector<int64_t>& steps) {
    std::vector<SampleEvent> rows;
    for (int64_t step : steps)
        for (int i = 0; i < 2; ++i) rows.push_back(sampleRow(step, i, sampleColor(step + 1000 * run, i), 16, 16));
    s.store.insertEvents<SampleEvent>(run, rows);
}

// The row of `run` shows `step`'s two images of that run, as stored (once read: the files of a step
// not held are read from the store when it is shown).
void expectRowImages(const CompareSamplesPanel& panel, int64_t run, int64_t step) {
    ASSERT_TRUE(waitFor([&] {
        const QList<SampleImage*> shown = panel.images(run);
        return shown.size() == 2 && !shown[0]->image().isNull() && !shown[1]->image().isNull();
    })) << "run " << run << " step " << step;
    const QList<SampleImage*> images = panel.images(run);
    ASSERT_EQ(images.size(), 2) << "run " << run;
    for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(images[i]->image().size(), QSize(16, 16));
        EXPECT_EQ(images[i]->image().pixelColor(8, 8).rgb(), sampleColor(step + 1000 * run, i).rgb())
            << "run " << run << " image " << i << " is not step " << step << "'s";
    }
}

QStringList rowLabels(const QWidget& panel, int64_t run) {
    QStringList out;
    if (const auto* row = panel.findChild<QWidget*>(QStringLiteral("compareSamples%1").arg(run)))
        for (const QLabel* l : row->findChildren<QLabel*>())
            if (l->objectName() != QLatin1String("sampleCaption")) out << l->text();
    return out;
}

} // namespace

// A row per run compared, named; each at the chosen step, or the nearest step below it; "no samples"
// for a run that drew none.
TEST(CompareSamples, ARowPerRunAtTheNearestStepAtOrBelow) {
    CraftedStore store;
    const int64_t a = store.addRun(tinySpec("draws-every-10"), RunState::Succeeded, 20);
    const int64_t b = store.addRun(tinySpec("draws-every-15"), RunState::Succeeded, 20);
    const int64_t c = store.addRun(tinySpec("draws-none"), RunState::Succeeded, 20);
    addSamples(store, a, {0, 10, 20});
    addSamples(store, b, {0, 15});

    StoreWatcher watcher(store.qpath());
    watcher.setInterval(20);
    RunListModel runs;
    QObject::connect(&watcher, &StoreWatcher::runsChanged, &runs,
                     [&runs](const std::vector<RunRecord>& r) { runs.setRuns(r); });
    ComparePage page(&runs, &watcher);
    page.resize(1280, 900);
    page.show();
    ASSERT_TRUE(waitFor([&] { return runs.rowCount() == 3; }));
    page.setCheckedRuns({a, b, c});
    ASSERT_TRUE(waitFor([&] { return page.loadedRuns().size() == 3; }));
    CompareSamplesPanel* panel = page.samplesPanel();
    ASSERT_TRUE(waitFor([&] {
        for (int64_t id : {a, b, c})
            if (!panel->model(id) || !panel->model(id)->isRead()) return false;
        return true;
    }));
    ASSERT_GE(page.curveTabs()->indexOf(panel), 0) << "no Samples tab";
    page.curveTabs()->setCurrentWidget(panel);

    // The newest step of all by default: run b shows its step 15.
    EXPECT_EQ(panel->chosenStep(), 20);
    EXPECT_EQ(panel->stepText().toStdString(), "step 20");
    EXPECT_EQ(panel->stepSlider()->maximum(), 3); // steps 0, 10, 15, 20
    EXPECT_EQ(rowLabels(*panel, a), (QStringList{QStringLiteral("#%1 draws-every-10").arg(a), QStringLiteral("step 20")}));
    EXPECT_EQ(rowLabels(*panel, b), (QStringList{QStringLiteral("#%1 draws-every-15").arg(b),
                                                 QStringLiteral("step 15\n(nearest at or before 20)")}));
    EXPECT_EQ(rowLabels(*panel, c), (QStringList{QStringLiteral("#%1 draws-none").arg(c), QStringLiteral("no samples")}));
    expectRowImages(*panel, a, 20);
    expectRowImages(*panel, b, 15);
    EXPECT_TRUE(panel->images(c).isEmpty());
    if (const QByteArray out = qgetenv("PARALLAX_SAMPLES_SCREENSHOT"); !out.isEmpty())
        page.grab().save(QString::fromLocal8Bit(out).replace(QStringLiteral(".png"), QStringLiteral("-compare.png")));

    // Step 15: a has none there and shows 10.
    panel->chooseStep(15);
    EXPECT_EQ(panel->rowStep(a), 10);
    EXPECT_EQ(panel->rowText(a).toStdString(), "step 10\n(nearest at or before 15)");
    EXPECT_EQ(panel->rowStep(b), 15);
    EXPECT_EQ(panel->rowText(b).toStdString(), "step 15");
    expectRowImages(*panel, a, 10);
    expectRowImages(*panel, b, 15);

    // Step 10 on the slider: b falls back to its step 0.
    panel->stepSlider()->setValue(1);
    EXPECT_EQ(panel->chosenStep(), 10);
    EXPECT_EQ(panel->rowStep(a), 10);
    EXPECT_EQ(panel->rowStep(b), 0);
    expectRowImages(*panel, b, 0);
    EXPECT_FALSE(panel->rowStep(c).has_value());

    // Without the runs that drew images, the tab goes.
    page.setCheckedRuns({c});
    ASSERT_TRUE(waitFor([&] { return page.loadedRuns().size() == 1; }));
    ASSERT_TRUE(waitFor([&] { return page.curveTabs()->indexOf(panel) < 0; })) << "the Samples tab stayed";
    EXPECT_EQ(panel->rowText(c).toStdString(), "no samples");
    EXPECT_TRUE(panel->rowText(a).isEmpty());
}

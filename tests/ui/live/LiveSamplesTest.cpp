#include "ui/pages/LivePage.h"

#include "tests/ui/live/LiveTestSupport.h"
#include "tests/support/SampleRows.h"
#include "ui/models/RunSamplesModel.h"
#include "ui/models/StoreWatcher.h"
#include "ui/pages/SamplesPanel.h"
#include "ui/widgets/SampleImage.h"

#include <QApplication>
#include <QImage>
#include <QLabel>
#include <QSlider>
#include <QTabWidget>

#include <gtest/gtest.h>

#include <algorithm>

namespace parallax {
namespace {

using test::sampleColor;
using test::sampleRow;
using test::TempStore;
using test::waitFor;

// The page on a run of the store, shown, with a watcher that polls often.
struct ShownSamplesPage {
    StoreWatcher watcher;
    LivePage page{&watcher};
    ShownSamplesPage(const TempStore& ts, int64_t run) : watcher(ts.qpath()) {
        watcher.setInterval(20);
        page.resize(1200, 900);
        page.show();
        page.setRun(run);
    }
    SamplesPanel* panel() const { return page.samplesPanel(); }
    bool samplesTabShown() const { return page.bottomTabs()->indexOf(page.samplesPanel()) >= 0; }
    void showSamplesTab() const { page.bottomTabs()->setCurrentWidget(page.samplesPanel()); }
};

// Each shown image is the stored one of `step` (its size and colour, pixel for pixel in the widget too).
void expectImagesOf(const SamplesPanel& panel, int64_t step, int count, QSize size) {
    const QList<SampleImage*> images = panel.images();
    ASSERT_EQ(images.size(), count) << "at step " << step;
    for (int i = 0; i < count; ++i) {
        const QImage& img = images[i]->image();
        ASSERT_FALSE(img.isNull());
        EXPECT_EQ(img.size(), size);
        const QColor want = sampleColor(step, i);
        EXPECT_EQ(img.pixelColor(0, 0).rgb(), want.rgb()) << "step " << step << " image " << i;
        EXPECT_EQ(img.pixelColor(size.width() - 1, size.height() - 1).rgb(), want.rgb());
        if (images[i]->isVisible()) {
            const QImage drawn = images[i]->grab().toImage();
            EXPECT_EQ(drawn.pixelColor(drawn.width() / 2, drawn.height() / 2).rgb(), want.rgb())
                << "drawn image " << i << " of step " << step;
        }
    }
}

// Waits until the panel shows `count` images of `step`, read from the store (a step whose files are
// not held is read when it is shown).
bool waitForImagesOf(const SamplesPanel& panel, int64_t step, int count) {
    return waitFor([&] {
        const QList<SampleImage*> images = panel.images();
        if (panel.shownStep() != step || images.size() != count) return false;
        return std::none_of(images.begin(), images.end(), [](const SampleImage* i) { return i->image().isNull(); });
    });
}

void insertStep(TempStore& ts, int64_t run, int64_t step, int count = 2) {
    std::vector<SampleEvent> rows;
    for (int i = 0; i < count; ++i) rows.push_back(sampleRow(step, i, sampleColor(step, i), 32, 24, i == 0 ? "a red fox" : ""));
    ts.store.insertEvents<SampleEvent>(run, rows);
}

// The images of the newest step side by side with their captions; the slider shows another step's;
// new steps come in while the run goes on, followed only while the slider is at the newest.
TEST(LiveSamples, ShowsAStepsImagesAndFollowsNewSteps) {
    TempStore ts;
    const int64_t run = ts.newRun("qwen-image-samples", 300, 1);
    ts.store.markRunning(run, 4242, "node0");
    insertStep(ts, run, 0);
    insertStep(ts, run, 40);

    ShownSamplesPage p(ts, run);
    ASSERT_TRUE(waitFor([&] { return p.samplesTabShown(); })) << "no Samples tab";
    p.showSamplesTab();
    ASSERT_TRUE(waitForImagesOf(*p.panel(), 40, 2));
    EXPECT_EQ(p.panel()->stepText().toStdString(), "step 40 of 300 · 2 images");
    QApplication::processEvents();
    expectImagesOf(*p.panel(), 40, 2, QSize(32, 24));
    QStringList captions;
    for (const QLabel* l : p.panel()->findChildren<QLabel*>(QStringLiteral("sampleCaption"))) captions << l->text();
    EXPECT_EQ(captions, (QStringList{QStringLiteral("#0 · seed 42 · 32×24 · a red fox"), QStringLiteral("#1 · seed 43 · 32×24")}));
    if (const QByteArray out = qgetenv("PARALLAX_SAMPLES_SCREENSHOT"); !out.isEmpty())
        p.page.grab().save(QString::fromLocal8Bit(out));

    // Back to step 0.
    QSlider* slider = p.panel()->stepSlider();
    ASSERT_EQ(slider->maximum(), 1);
    slider->setValue(0);
    EXPECT_EQ(p.panel()->stepText().toStdString(), "step 0 of 300 · 2 images");
    ASSERT_TRUE(waitForImagesOf(*p.panel(), 0, 2));
    QApplication::processEvents();
    expectImagesOf(*p.panel(), 0, 2, QSize(32, 24));

    // A new step while the slider is back at 0: offered, not shown.
    insertStep(ts, run, 80);
    ASSERT_TRUE(waitFor([&] { return slider->maximum() == 2; })) << "step 80 never came";
    EXPECT_EQ(p.panel()->shownStep(), 0);
    // At the newest again, the page follows the next one.
    slider->setValue(2);
    EXPECT_EQ(p.panel()->stepText().toStdString(), "step 80 of 300 · 2 images");
    insertStep(ts, run, 120, 3);
    ASSERT_TRUE(waitFor([&] { return p.panel()->shownStep() == 120; })) << "did not follow step 120";
    EXPECT_EQ(p.panel()->stepText().toStdString(), "step 120 of 300 · 3 images");
    ASSERT_TRUE(waitForImagesOf(*p.panel(), 120, 3));
    QApplication::processEvents();
    expectImagesOf(*p.panel(), 120, 3, QSize(32, 24));

    // Memory stays bounded: only the decoded images of the steps shown last are kept.
    for (int64_t s : {0, 40, 80, 120, 40}) {
        p.panel()->showStep(s);
        ASSERT_TRUE(waitForImagesOf(*p.panel(), s, s == 120 ? 3 : 2)) << "step " << s;
    }
    const std::vector<int64_t> cached = p.panel()->model()->cachedSteps();
    EXPECT_EQ(cached, (std::vector<int64_t>{40, 120, 80, 0}));
    EXPECT_LE(cached.size(), RunSamplesModel::kCachedSteps);
}

// A run that draws no images has no Samples tab, until its first images come in.
TEST(LiveSamples, TheTabAppearsWithTheFirstImages) {
    TempStore ts;
    const int64_t run = ts.newRun("gpt", 100, 1);
    ts.store.markRunning(run, 4242, "node0");
    ShownSamplesPage p(ts, run);
    ASSERT_TRUE(waitFor([&] { return p.panel()->model()->isRead(); }));
    EXPECT_FALSE(p.samplesTabShown());
    EXPECT_EQ(p.page.bottomTabs()->count(), 1);

    insertStep(ts, run, 0, 1);
    ASSERT_TRUE(waitFor([&] { return p.samplesTabShown(); })) << "the first image did not appear";
    p.showSamplesTab();
    EXPECT_EQ(p.panel()->stepText().toStdString(), "step 0 of 100 · 1 image");
    ASSERT_TRUE(waitForImagesOf(*p.panel(), 0, 1));
    QApplication::processEvents();
    expectImagesOf(*p.panel(), 0, 1, QSize(32, 24));

    // Another run without images takes the tab away again.
    const int64_t other = ts.newRun("gpt-2", 100, 1);
    p.page.setRun(other);
    ASSERT_TRUE(waitFor([&] { return p.panel()->model()->run() == other && p.panel()->model()->isRead(); }));
    EXPECT_FALSE(p.samplesTabShown());
}

// A spec that asks for images shows the tab before the first ones, saying when they come.
TEST(LiveSamples, ASpecThatDrawsImagesShowsTheTabBeforeTheFirst) {
    TempStore ts;
    NewRun n;
    n.name = "qwen-image";
    n.steps_total = 200;
    n.world_size = 1;
    n.spec_toml = "name = \"qwen-image\"\n\n[samples]\nevery = 20\n";
    const int64_t run = ts.store.createRun(n);
    ts.store.markRunning(run, 4242, "node0");
    ShownSamplesPage p(ts, run);
    ASSERT_TRUE(waitFor([&] { return p.samplesTabShown(); })) << "no Samples tab";
    EXPECT_EQ(p.panel()->model()->samplesEvery(), 20);
    EXPECT_TRUE(p.panel()->images().isEmpty());
    EXPECT_EQ(p.panel()->stepText().toStdString(), "No images yet: the run draws them every 20 steps");
}

} // namespace
} // namespace parallax

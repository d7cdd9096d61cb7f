#include "tests/support/SampleRows.h"
#include "tests/ui/live/LiveTestSupport.h"
#include "ui/models/RunSamplesModel.h"
#include "ui/models/StoreWatcher.h"
#include "ui/pages/SamplesPanel.h"
#include "ui/widgets/SampleImage.h"

#include <QImage>
#include <QLabel>
#include <QSlider>

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

namespace parallax {
namespace {

using test::sampleColor;
using test::sampleRow;
using test::TempStore;
using test::waitFor;

constexpr int kImagesPerStep = 4;

// Whether the panel shows the stored images of `step`, pixel for pixel.
bool showsStoredImagesOf(const SamplesPanel& panel, int64_t step) {
    const QList<SampleImage*> images = panel.images();
    if (panel.shownStep() != step || images.size() != kImagesPerStep) return false;
    for (int i = 0; i < kImagesPerStep; ++i) {
        const QImage& img = images[i]->image();
        if (img.isNull() || img.size() != QSize(48, 32)) return false;
        if (img.pixelColor(0, 0).rgb() != sampleColor(step, i).rgb()) return false;
    }
    return true;
}

QStringList captions(const SamplesPanel& panel) {
    QStringList out;
    for (const QLabel* l : panel.findChildren<QLabel*>(QStringLiteral("sampleCaption"))) out << l->text();
    return out;
}

// A long run's images: the console lists every row of every step, but holds the PNG files of the
// steps shown last only; a step scrolled back to, long let go, shows its images again, read back
// from the store.
TEST(RunSamplesModel, HoldsThePngFilesOfTheStepsShownLastOnly) {
    TempStore ts;
    const int64_t run = ts.newRun("long-run-with-samples", 100000, 1);
    ts.store.markRunning(run, 4242, "node0");
    constexpr int kSteps = 60;
    std::map<int64_t, size_t> stepBytes; // each step's PNG files, as stored
    for (int s = 0; s < kSteps; ++s) {
        const int64_t step = int64_t(s) * 100;
        std::vector<SampleEvent> rows;
        for (int i = 0; i < kImagesPerStep; ++i) {
            rows.push_back(sampleRow(step, i, sampleColor(step, i), 48, 32, "prompt " + std::to_string(step)));
            stepBytes[step] += base64Decode(rows.back().png)->size();
        }
        ts.store.insertEvents<SampleEvent>(run, rows);
    }
    size_t largestStep = 0, allSteps = 0;
    for (const auto& [step, bytes] : stepBytes) {
        largestStep = std::max(largestStep, bytes);
        allSteps += bytes;
    }
    const size_t bound = RunSamplesModel::kHeldSteps * largestStep;
    ASSERT_LT(bound, allSteps) << "the run must hold more than the bound, for the test to say anything";

    StoreWatcher watcher(ts.qpath());
    watcher.setInterval(20);
    SamplesPanel panel(&watcher);
    panel.resize(1200, 500);
    panel.show();
    panel.setRun(run);
    const int64_t newest = int64_t(kSteps - 1) * 100;
    ASSERT_TRUE(waitFor([&] { return showsStoredImagesOf(panel, newest); })) << "the newest step's images";
    const RunSamplesModel* model = panel.model();

    // Every step is listed with its rows' small fields, none with its PNG.
    ASSERT_EQ(model->steps().size(), size_t(kSteps));
    for (int64_t step : model->steps()) {
        const std::vector<SampleEvent>& rows = model->samplesAt(step);
        ASSERT_EQ(rows.size(), size_t(kImagesPerStep)) << "step " << step;
        for (const SampleEvent& r : rows) {
            EXPECT_TRUE(r.png.empty()) << "step " << step << " image " << r.index << " kept its PNG in the listing";
            EXPECT_EQ(r.prompt, "prompt " + std::to_string(step));
            EXPECT_EQ(r.seed, 42 + r.index);
            EXPECT_EQ(r.width, 48);
        }
    }

    // Scrolling back through the whole run: each step's images are read when it is shown, and the
    // files held stay within kHeldSteps steps.
    QSlider* slider = panel.stepSlider();
    ASSERT_EQ(slider->maximum(), kSteps - 1);
    for (int position = kSteps - 2; position >= 0; --position) {
        const int64_t step = int64_t(position) * 100;
        slider->setValue(position);
        ASSERT_TRUE(waitFor([&] { return showsStoredImagesOf(panel, step); })) << "step " << step;
        EXPECT_LE(model->heldSteps().size(), RunSamplesModel::kHeldSteps) << "at step " << step;
        EXPECT_LE(model->heldPngBytes(), bound) << "at step " << step;
        EXPECT_LE(model->cachedSteps().size(), RunSamplesModel::kCachedSteps) << "at step " << step;
    }
    const std::vector<int64_t> held = model->heldSteps();
    EXPECT_EQ(held.front(), 0);
    ASSERT_EQ(std::count(held.begin(), held.end(), newest), 0) << "the newest step's files were not let go";

    // Back at the newest step, let go long ago: it says that its images are being read, then shows
    // them as stored.
    slider->setValue(kSteps - 1);
    EXPECT_EQ(panel.stepText().toStdString(), "step 5900 of 100000 · 4 images");
    const QStringList reading = captions(panel);
    ASSERT_EQ(reading.size(), kImagesPerStep);
    for (const QString& c : reading) EXPECT_TRUE(c.contains(QStringLiteral("reading the image"))) << c.toStdString();
    ASSERT_TRUE(waitFor([&] { return showsStoredImagesOf(panel, newest); })) << "the newest step, read back";
    EXPECT_EQ(model->heldSteps().front(), newest);
    EXPECT_LE(model->heldPngBytes(), bound);
    for (const QString& c : captions(panel)) EXPECT_FALSE(c.contains(QStringLiteral("reading"))) << c.toStdString();
}

} // namespace
} // namespace parallax

// The New run form for a qwen_image spec on an image-caption dataset: the dataset's images and
// aspect buckets, how much of its latent cache is there, the Issues box's warning while a run
// would be refused, and "Cache now" running the real parallax-cli cache (parallax-cache) on a tiny
// pipeline made by the PyTorch reference.

#include "BrowseTestSupport.h"

#include "core/spec/SpecIO.h"
#include "tests/core/conversations/PngFile.h"
#include "tests/trainer/cache/TinyPipeline.h"
#include "ui/models/CacheRunner.h"
#include "ui/models/CaptionDatasetModel.h"
#include "ui/pages/DatasetCacheRow.h"
#include "ui/pages/NewRunPage.h"
#include "ui/pages/ProbeRow.h"
#include "ui/pages/SpecIssuesPanel.h"

#include <QFileInfo>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

using namespace parallax;
using namespace parallax::test;

namespace {

// Six images in three buckets within 1536 pixels: 48 x 32 (3), 32 x 32 (2), 16 x 48 (1).
void writeCaptionFolder(const std::string& folder) {
    std::filesystem::create_directories(folder);
    const int sides[6][2] = {{48, 32}, {48, 32}, {48, 32}, {32, 32}, {40, 40}, {20, 50}};
    for (int i = 0; i < 6; ++i) {
        const std::string name = folder + "/img" + std::to_string(i);
        parallax::testing::writeRampPng(name + ".png", sides[i][0], sides[i][1], static_cast<unsigned>(i + 1));
        std::ofstream(name + ".txt") << "photo " << i;
    }
}

RunSpec latentSpec(const std::string& pipeline, const std::string& data) {
    std::vector<SpecIssue> unknown;
    return parseSpec("name = \"cache-row\"\n"
                     "[model]\nkind = \"qwen_image\"\npreset = \"tiny\"\nfrom = \"" + pipeline + "\"\nseq_len = 64\n"
                     "[finetune]\nmode = \"lora\"\nlora_r = 4\nlora_alpha = 8\n"
                     "[data]\nkind = \"latents\"\npath = \"" + data + "\"\nmax_pixels = 1536\nshuffle = false\n"
                     "[train]\nsteps = 4\nglobal_batch = 2\nmicro_batch = 1\n"
                     "[launch]\ntarget = \"local\"\ndevice = \"cpu\"\n",
                     "cache-row.toml", unknown);
}

struct CachePage {
    QTemporaryDir dir;
    std::string root = dir.path().toStdString();
    NewRunPage page;
    DatasetCacheRow* row = page.datasetCacheRow();
    CachePage() {
        page.setStorePath(dir.filePath(QStringLiteral("parallax.db")));
        page.resize(1400, 900);
        page.show();
    }
    // Sets the spec and waits for its dataset to be read.
    bool read(const RunSpec& spec) {
        page.setSpec(spec);
        return waitFor([&] { return row->dataset()->isKnown() && !row->dataset()->isReading(); }, 20000);
    }
    QString summary() const { return row->summaryLabel()->text(); }
    QStringList issues() const { return shownIssues(page); }
    bool issueSays(const QString& text) const {
        return !issues().filter(text).isEmpty();
    }
};

TEST(DatasetCacheRow, ShowsTheBucketsAndThatNothingIsCachedYet) {
    CachePage p;
    const std::string data = p.root + "/photos";
    writeCaptionFolder(data);
    ASSERT_TRUE(p.read(latentSpec(p.root + "/pipeline", data)));
    EXPECT_TRUE(p.row->row()->isVisible());
    EXPECT_TRUE(p.summary().contains(QStringLiteral("6 images in 3 buckets: 48 x 32 (3), 32 x 32 (2), 16 x 48 (1)")))
        << p.summary().toStdString();
    EXPECT_TRUE(p.summary().contains(QStringLiteral("cache: 0 of 6 encoded"))) << p.summary().toStdString();
    EXPECT_TRUE(p.row->row()->button()->isVisible());
    EXPECT_EQ(p.row->row()->button()->text(), QStringLiteral("Cache now"));
    ASSERT_TRUE(waitFor([&] { return p.issueSays(QStringLiteral("latent cache")); }, 2000)) << p.issues().join(QChar('\n')).toStdString();
    const QString warning = p.issues().filter(QStringLiteral("latent cache")).value(0);
    EXPECT_TRUE(warning.contains(QStringLiteral("holds 0 of 6 samples"))) << warning.toStdString();
    EXPECT_TRUE(warning.contains(QStringLiteral("parallax-cli cache SPEC"))) << warning.toStdString();

    // Another spec (the default gpt on synthetic data) has no such row, nor the warning.
    p.page.setSpec(RunSpec{});
    ASSERT_TRUE(waitFor([&] { return !p.issueSays(QStringLiteral("latent cache")); }, 2000));
    EXPECT_FALSE(p.row->row()->isVisible());
}

TEST(DatasetCacheRow, AnUncaptionedImageIsNamed) {
    CachePage p;
    const std::string data = p.root + "/photos";
    writeCaptionFolder(data);
    parallax::testing::writeRampPng(data + "/no-caption.png", 16, 16, 7);
    ASSERT_TRUE(p.read(latentSpec(p.root + "/pipeline", data)));
    EXPECT_TRUE(p.summary().contains(QStringLiteral("no-caption.png"))) << p.summary().toStdString();
    EXPECT_FALSE(p.summary().contains(QStringLiteral("cache:"))) << p.summary().toStdString();
    EXPECT_FALSE(p.row->row()->button()->isVisible()) << "nothing to cache until the dataset reads";
    ASSERT_TRUE(waitFor([&] { return p.issueSays(QStringLiteral("no-caption.png")); }, 2000))
        << p.issues().join(QChar('\n')).toStdString();

    // Written the caption, the dataset reads when the form reads it again.
    std::ofstream(data + "/no-caption.txt") << "a caption at last";
    p.row->dataset()->refresh();
    ASSERT_TRUE(waitFor([&] { return p.summary().contains(QStringLiteral("7 images in")); }, 20000))
        << p.summary().toStdString();
}

// Qwen-Image-Edit data: the row says how many samples edit reference images and for which pipeline;
// under a text-to-image pipeline folder the form names the sample and the folder to use, before any
// run would refuse it.
TEST(DatasetCacheRow, EditSamplesShowTheirReferencesAndAPipelineThatTakesNoneIsNamed) {
    CachePage p;
    const std::string data = p.root + "/photos", pipeline = p.root + "/pipeline";
    writeCaptionFolder(data);
    std::ofstream(data + "/metadata.csv") << "image,prompt,edit_image\nimg0.png,make it red,img3.png\n"
                                             "img1.png,make it blue,img4.png\nimg2.png,a photo,\n";
    std::filesystem::create_directories(pipeline);
    std::ofstream(pipeline + "/model_index.json") << R"({"_class_name": "QwenImageEditPipeline"})";
    ASSERT_TRUE(p.read(latentSpec(pipeline, data + "/metadata.csv")));
    EXPECT_TRUE(p.summary().contains(QStringLiteral("3 images in 1 bucket: 48 x 32 (3); 2 edit 1 reference image "
                                                    "(QwenImageEditPipeline)")))
        << p.summary().toStdString();
    EXPECT_TRUE(p.row->row()->button()->isVisible());

    std::ofstream(pipeline + "/model_index.json") << R"({"_class_name": "QwenImagePipeline"})";
    p.row->dataset()->refresh();
    ASSERT_TRUE(waitFor([&] { return p.summary().contains(QStringLiteral("makes images from text alone")); }, 20000))
        << p.summary().toStdString();
    EXPECT_TRUE(p.summary().contains(QStringLiteral("metadata.csv"))) << p.summary().toStdString();
    EXPECT_FALSE(p.row->row()->button()->isVisible());
    ASSERT_TRUE(waitFor([&] { return p.issueSays(QStringLiteral("QwenImageEditPipeline")); }, 2000))
        << p.issues().join(QChar('\n')).toStdString();
}

// "Cache now": parallax-cli cache on the form's spec, its progress lines in the row, and the row
// reading the cache again when it ends.
TEST(DatasetCacheRow, CacheNowEncodesTheDatasetAndTheRowSaysComplete) {
    const char* build = std::getenv("PARALLAX_BUILD_DIR");
    ASSERT_TRUE(build && *build) << "PARALLAX_BUILD_DIR names the build with parallax-cli";
    const QString cli = QString::fromUtf8(build) + QStringLiteral("/app/parallax-cli");
    if (!QFileInfo(QString::fromUtf8(build) + QStringLiteral("/app/parallax-cache")).isExecutable())
        GTEST_SKIP() << "parallax-cache is built with the worker (cmake -DPARALLAX_WORKER=ON)";
    parallax::testing::TinyPipeline pipeline;
    if (!pipeline.problem.empty()) GTEST_SKIP() << pipeline.problem;

    CachePage p;
    const std::string data = p.root + "/photos";
    writeCaptionFolder(data);
    ASSERT_TRUE(p.read(latentSpec(pipeline.path, data)));
    ASSERT_TRUE(p.summary().contains(QStringLiteral("cache: 0 of 6 encoded"))) << p.summary().toStdString();
    QStringList lines;
    QObject::connect(p.row->runner(), &ProbeCommand::progress, [&](const QString& line) { lines << line; });
    p.row->runner()->setCliPath(cli);
    QTest::mouseClick(p.row->row()->button(), Qt::LeftButton);
    EXPECT_EQ(p.row->row()->button()->text(), QStringLiteral("Stop caching"));
    ASSERT_TRUE(waitFor([&] { return !p.row->runner()->isRunning(); }, 300000)) << lines.join(QChar('\n')).toStdString();
    EXPECT_TRUE(lines.join(QChar('\n')).contains(QStringLiteral("cache: 6 of 6 samples"))) << lines.join(QChar('\n')).toStdString();
    ASSERT_TRUE(waitFor([&] { return p.summary().contains(QStringLiteral("cache: complete")); }, 20000))
        << p.summary().toStdString() << "\n" << p.row->row()->status()->text().toStdString();
    EXPECT_TRUE(p.row->row()->status()->text().contains(QStringLiteral("6 samples")))
        << p.row->row()->status()->text().toStdString();
    EXPECT_FALSE(p.row->row()->button()->isVisible()) << "nothing left to cache";
    EXPECT_FALSE(p.issueSays(QStringLiteral("latent cache"))) << p.issues().join(QChar('\n')).toStdString();

    // Another pixel budget is another cache: 0 of 6 again, and the warning is back.
    RunSpec other = latentSpec(pipeline.path, data);
    other.data.max_pixels = 1024;
    ASSERT_TRUE(p.read(other));
    EXPECT_TRUE(p.summary().contains(QStringLiteral("cache: 0 of 6 encoded"))) << p.summary().toStdString();
    EXPECT_TRUE(waitFor([&] { return p.issueSays(QStringLiteral("latent cache")); }, 2000));
}

} // namespace

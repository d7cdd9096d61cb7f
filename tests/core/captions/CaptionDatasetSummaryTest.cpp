// What the console shows of an image-caption dataset: its samples, their aspect buckets from the
// images' headers, how much of its latent cache is there for a pipeline and pixel budget, and the
// dataset's problem naming the file.

#include "core/captions/CaptionDatasetSummary.h"
#include "tests/core/conversations/PngFile.h"
#include "tests/support/Process.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace parallax {
namespace {

using testing::TempDir;

constexpr int64_t kMaxPixels = 48 * 48;

// Three wide (48 x 32), two square (32 x 32) and one tall (16 x 48) image, each with its caption.
void writeDataset(const std::string& folder) {
    std::filesystem::create_directories(folder);
    const struct {
        const char* name;
        int w, h;
    } images[] = {{"a", 48, 32}, {"b", 50, 34}, {"c", 60, 40}, {"d", 32, 32}, {"e", 33, 33}, {"f", 20, 50}};
    unsigned seed = 1;
    for (const auto& i : images) {
        testing::writeRampPng(folder + "/" + i.name + ".png", i.w, i.h, seed++);
        std::ofstream(folder + "/" + i.name + ".txt") << "a picture called " << i.name;
    }
}

TEST(CaptionDatasetSummary, CountsSamplesAndBucketsFromTheHeaders) {
    TempDir tmp;
    writeDataset(tmp.path() + "/data");
    const CaptionDatasetSummary s = summarizeCaptionDataset(tmp.path() + "/data", tmp.path() + "/pipe", kMaxPixels);
    ASSERT_TRUE(s.ok()) << s.error;
    EXPECT_EQ(s.samples, 6);
    ASSERT_EQ(s.buckets.size(), 3u);
    EXPECT_EQ(s.buckets.at(BucketSize{48, 32}), 3);
    EXPECT_EQ(s.buckets.at(BucketSize{32, 32}), 2);
    EXPECT_EQ(s.buckets.at(BucketSize{16, 48}), 1);
    EXPECT_EQ(bucketSummaryText(s), "6 images in 3 buckets: 48 x 32 (3), 32 x 32 (2), 16 x 48 (1)");
    EXPECT_EQ(s.cache.samples, 6);
    EXPECT_EQ(s.cache.samples_done, 0);
    EXPECT_FALSE(s.cache.made_for_this);
    EXPECT_FALSE(s.cache.complete());
    EXPECT_EQ(s.cache.folder, tmp.path() + "/data/.parallax-cache");
}

TEST(CaptionDatasetSummary, CacheIsCompleteOnlyForItsPipelineAndBudget) {
    TempDir tmp;
    const std::string data = tmp.path() + "/data", pipe = tmp.path() + "/pipe";
    writeDataset(data);
    CaptionDatasetSummary s = summarizeCaptionDataset(data, pipe, kMaxPixels);
    ASSERT_TRUE(s.ok()) << s.error;
    // A cache as parallax-cache leaves it: its manifest, then the one shard six samples fill.
    writeLatentCacheManifest(s.cache.folder, latentCacheKey(readImageCaptions(data), pipe, kMaxPixels));
    s = summarizeCaptionDataset(data, pipe, kMaxPixels);
    EXPECT_TRUE(s.cache.made_for_this);
    EXPECT_EQ(s.cache.samples_done, 0);
    std::ofstream(s.cache.folder + "/" + cacheShardName(0)) << "shard";
    s = summarizeCaptionDataset(data, pipe, kMaxPixels);
    EXPECT_TRUE(s.cache.complete());
    EXPECT_EQ(s.cache.samples_done, 6);
    // Another budget or another pipeline folder is another cache.
    EXPECT_FALSE(summarizeCaptionDataset(data, pipe, 32 * 32).cache.made_for_this);
    EXPECT_FALSE(summarizeCaptionDataset(data, tmp.path() + "/other", kMaxPixels).cache.made_for_this);
    // A caption changed since: the cache no longer holds this dataset.
    std::ofstream(data + "/a.txt") << "another caption";
    EXPECT_FALSE(summarizeCaptionDataset(data, pipe, kMaxPixels).cache.complete());
}

TEST(CaptionDatasetSummary, ProblemsNameTheFile) {
    TempDir tmp;
    const std::string data = tmp.path() + "/data";
    writeDataset(data);
    testing::writeRampPng(data + "/uncaptioned.png", 16, 16, 9);
    CaptionDatasetSummary s = summarizeCaptionDataset(data, tmp.path() + "/pipe", kMaxPixels);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.error.find("uncaptioned.png"), std::string::npos) << s.error;
    EXPECT_EQ(s.samples, 0);
    EXPECT_TRUE(s.buckets.empty());

    // An image whose header is cut off: named through its caption file.
    std::filesystem::remove(data + "/uncaptioned.png");
    std::filesystem::resize_file(data + "/c.png", 20);
    s = summarizeCaptionDataset(data, tmp.path() + "/pipe", kMaxPixels);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.error.find(data + "/c.txt: "), std::string::npos) << s.error;
    EXPECT_NE(s.error.find("c.png"), std::string::npos) << s.error;

    s = summarizeCaptionDataset(tmp.path() + "/missing", tmp.path() + "/pipe", kMaxPixels);
    EXPECT_NE(s.error.find(tmp.path() + "/missing: no such file or folder"), std::string::npos) << s.error;
}

// Qwen-Image-Edit data: the samples that edit reference images are counted with how many each
// gives and the model folder's pipeline; a folder whose pipeline takes fewer is the error a run
// would give, naming the sample; a reference image that does not read is named through its row.
TEST(CaptionDatasetSummary, EditSamplesAreCountedForTheirPipeline) {
    TempDir tmp;
    const std::string data = tmp.path() + "/data", pipe = tmp.path() + "/pipe";
    writeDataset(data);
    std::filesystem::remove_all(data + "/.parallax-cache");
    for (const char* name : {"a", "b", "c", "d", "e", "f"}) std::filesystem::remove(data + "/" + name + ".txt");
    std::ofstream(data + "/metadata.jsonl") << R"({"image": "a.png", "prompt": "A", "edit_image": "d.png"}
{"image": "b.png", "prompt": "B", "edit_image": ["d.png", "e.png"]}
{"image": "c.png", "prompt": "C"}
)";
    std::filesystem::create_directories(pipe);
    std::ofstream(pipe + "/model_index.json") << R"({"_class_name": "QwenImageEditPlusPipeline"})";
    CaptionDatasetSummary s = summarizeCaptionDataset(data + "/metadata.jsonl", pipe, kMaxPixels);
    ASSERT_TRUE(s.ok()) << s.error;
    EXPECT_EQ(s.samples, 3);
    EXPECT_EQ(s.edit_samples, 2);
    EXPECT_EQ(s.fewest_references, 1);
    EXPECT_EQ(s.most_references, 2);
    EXPECT_EQ(bucketSummaryText(s),
              "3 images in 1 bucket: 48 x 32 (3); 2 edit 1 to 2 reference images (QwenImageEditPlusPipeline)");

    // QwenImageEditPipeline takes one reference image: the second row is named.
    std::ofstream(pipe + "/model_index.json") << R"({"_class_name": "QwenImageEditPipeline"})";
    s = summarizeCaptionDataset(data + "/metadata.jsonl", pipe, kMaxPixels);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.error.find("metadata.jsonl:2: 2 edit_image paths"), std::string::npos) << s.error;
    EXPECT_NE(s.error.find("use a QwenImageEditPlusPipeline folder"), std::string::npos) << s.error;
    EXPECT_EQ(s.edit_samples, 0);

    // A reference image cut short, under a pipeline that takes it: named with its row.
    std::ofstream(pipe + "/model_index.json") << R"({"_class_name": "QwenImageEditPlusPipeline"})";
    std::filesystem::resize_file(data + "/e.png", 20);
    s = summarizeCaptionDataset(data + "/metadata.jsonl", pipe, kMaxPixels);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.error.find("metadata.jsonl:2: "), std::string::npos) << s.error;
    EXPECT_NE(s.error.find("e.png"), std::string::npos) << s.error;
}

} // namespace
} // namespace parallax

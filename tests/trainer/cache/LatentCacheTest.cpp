// `parallax-cli cache`: an image-caption dataset of PNGs of three aspects encoded into its cache by
// the tiny pipeline's VAE and text encoder; each sample's latents and prompt states equal what the
// VAE and the encoder give for its image fitted to its bucket; a cache killed (SIGKILL) after its
// first shard goes on from there and ends equal to one made whole; a changed caption makes it again;
// a qwen_image LoRA run trains on the dataset through its cache, and without one encodes in the step.

#include "core/captions/AspectBucket.h"
#include "core/captions/LatentCache.h"
#include "core/formats/SafetensorsFile.h"
#include "core/formats/SafetensorsWriter.h"
#include "core/image/ImageDecoder.h"
#include "core/spec/SpecIO.h"
#include "tests/core/conversations/PngFile.h"
#include "tests/trainer/cache/TinyPipeline.h"
#include "tests/trainer/support/SpecText.h"
#include "tests/trainer/support/WorkerRun.h"
#include "trainer/cache/LatentCacheWriter.h"
#include "trainer/cache/QwenImageTextEncoder.h"
#include "trainer/data/DataError.h"
#include "trainer/data/LatentData.h"
#include "trainer/models/PublishedWeights.h"
#include "trainer/models/QwenImageVaeWeights.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

namespace parallax {
namespace {

using namespace testing;

constexpr int kImages = 70; // three shards: 32, 32 and 6

class LatentCache : public ::testing::Test {
protected:
    static TinyPipeline& pipeline() { return sharedTinyPipeline(); }
    void SetUp() override {
        if (!pipeline().problem.empty()) GTEST_SKIP() << pipeline().problem;
        data = tmp.path() + "/photos";
        std::filesystem::create_directories(data);
        const int sides[3][2] = {{48, 32}, {40, 40}, {30, 52}}; // buckets 48 x 32, 32 x 32, 16 x 48 within 48 x 32
        for (int i = 0; i < kImages; ++i) {
            char name[16];
            std::snprintf(name, sizeof name, "img%03d", i);
            writeRampPng(data + "/" + name + ".png", sides[i % 3][0], sides[i % 3][1], static_cast<unsigned>(i + 1));
            std::ofstream(data + "/" + name + ".txt") << "photo " << i << (i % 2 ? " of a red ramp" : ", noisy");
        }
        spec = readSpecFile(writeSpec());
    }
    std::string writeSpec(const std::string& extra = "", int64_t microBatch = 1, int64_t dp = 1) {
        TinySpec s;
        s.dp = dp;
        s.kind = "qwen_image";
        s.extraModel = "from = \"" + pipeline().path + "\"\nseq_len = 64";
        s.data = "latents";
        s.extraData = "path = \"" + data + "\"\nmax_pixels = 1536\nshuffle = false" + extra;
        s.finetune = "mode = \"lora\"\nlora_r = 4\nlora_alpha = 8";
        s.steps = 4;
        s.globalBatch = 2 * microBatch;
        s.microBatch = microBatch;
        const std::string path = tmp.path() + "/spec.toml";
        std::ofstream(path) << s.toToml();
        return path;
    }
    std::function<void(const std::string&)> record() {
        return [this](const std::string& line) { said += line + "\n"; };
    }
    TempDir tmp;
    std::string data, said;
    RunSpec spec;
};

TEST_F(LatentCache, EachSampleIsItsImageAtItsBucketAndItsPromptsStates) {
    const LatentCacheResult r = writeLatentCache(spec, {}, record());
    EXPECT_EQ(r.samples, kImages);
    EXPECT_EQ(r.encoded, kImages);
    EXPECT_EQ(r.folder, data + "/.parallax-cache");
    ASSERT_EQ(r.buckets.size(), 3u) << said;
    EXPECT_EQ(r.buckets.at(BucketSize{48, 32}), 24);
    EXPECT_EQ(r.buckets.at(BucketSize{32, 32}), 23);
    EXPECT_EQ(r.buckets.at(BucketSize{16, 48}), 23);
    EXPECT_NE(said.find("cache: 64 of 70 samples"), std::string::npos) << said;
    for (int s = 0; s < 3; ++s) EXPECT_TRUE(std::filesystem::exists(r.folder + "/" + cacheShardName(s)));

    // Sample 34 (40 x 40 -> 32 x 32) in shard 1, against the VAE and the encoder themselves.
    const SafetensorsFile shard(r.folder + "/" + cacheShardName(1));
    const torch::Tensor latents = tensorOf(shard.view(cacheSampleName(34) + ".latents"));
    const torch::Tensor prompt = tensorOf(shard.view(cacheSampleName(34) + ".prompt_embeds"));
    Image fitted = fitToBucket(decodeImageFile(data + "/img034.png").rgb, {32, 32});
    const torch::Tensor image = torch::from_blob(fitted.samples.data(), {32, 32, 3}, torch::kUInt8)
                                    .permute({2, 0, 1}).unsqueeze(0).to(torch::kFloat32).div(127.5).sub(1.0);
    QwenImageVaeOptions options;
    options.decoder = false;
    const auto vae = loadQwenImageVae(pipeline().path, options);
    EXPECT_TRUE(torch::equal(latents, vae->encode(image).squeeze(0)));
    EXPECT_EQ(latents.sizes(), (std::vector<int64_t>{16, 4, 4}));
    EXPECT_TRUE(torch::equal(prompt, QwenImageTextEncoder(pipeline().path).encode("photo 34, noisy")));
}

TEST_F(LatentCache, AKilledCacheGoesOnFromItsLastShardAndEndsAsOneMadeWhole) {
    const LatentCacheResult whole = writeLatentCache(spec, {}, record());
    const std::string kept = tmp.path() + "/whole";
    std::filesystem::rename(whole.folder, kept);

    const std::string cacher = buildDir() + "/app/parallax-cache";
    BackgroundProcess first = startProcess({cacher, tmp.path() + "/spec.toml"}, tmp.path() + "/first.out");
    const std::string firstShard = whole.folder + "/" + cacheShardName(0);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!std::filesystem::exists(firstShard) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ::kill(first.pid, SIGKILL);
    EXPECT_EQ(first.wait(), 128 + SIGKILL) << first.output();
    ASSERT_TRUE(std::filesystem::exists(firstShard)) << first.output();
    ASSERT_FALSE(std::filesystem::exists(whole.folder + "/" + cacheShardName(2))) << "killed after its last shard";

    const ProcessResult again = runProcess({cacher, tmp.path() + "/spec.toml"});
    ASSERT_EQ(again.exitCode, 0) << again.output;
    EXPECT_NE(again.output.find("going on from sample "), std::string::npos) << again.output;
    EXPECT_NE(again.output.find("70 samples"), std::string::npos) << again.output;
    for (int s = 0; s < 3; ++s) {
        const SafetensorsFile a(kept + "/" + cacheShardName(s)), b(whole.folder + "/" + cacheShardName(s));
        ASSERT_EQ(a.tensors().size(), b.tensors().size());
        for (const TensorInfo& t : a.tensors())
            EXPECT_TRUE(torch::equal(tensorOf(a.view(t.name)), tensorOf(b.view(t.name)))) << t.name;
    }
    const ProcessResult done = runProcess({cacher, tmp.path() + "/spec.toml"});
    EXPECT_NE(done.output.find("all 70 samples are encoded already"), std::string::npos) << done.output;
}

TEST_F(LatentCache, AChangedCaptionMakesTheCacheAgain) {
    writeLatentCache(spec, {}, record());
    std::ofstream(data + "/img007.txt") << "another caption";
    said.clear();
    const LatentCacheResult r = writeLatentCache(spec, {}, record());
    EXPECT_EQ(r.resumed, 0);
    EXPECT_EQ(r.encoded, kImages);
    EXPECT_NE(said.find("was made for another dataset, pipeline or data.max_pixels: making it again"), std::string::npos)
        << said;
}

// A cache made before shards kept the prompts' texts (its shards stripped of their metadata here):
// a run that opens it through the dataset still captions its samples; `cache` adds the texts to
// the shards, every tensor's bytes as they were, and says so once.
TEST_F(LatentCache, ACacheWithoutPromptTextsGetsThemFromItsDataset) {
    const LatentCacheResult made = writeLatentCache(spec, {}, record());
    std::map<std::string, std::vector<uint8_t>> bytes; // tensor -> its bytes, over every shard
    for (int s = 0; s < 3; ++s) {
        const std::string path = made.folder + "/" + cacheShardName(s);
        std::vector<TensorData> tensors;
        {
            const SafetensorsFile shard(path);
            for (const TensorInfo& t : shard.tensors()) {
                const TensorView v = shard.view(t);
                const auto* b = reinterpret_cast<const uint8_t*>(v.data);
                bytes[t.name].assign(b, b + v.byteSize);
            }
            for (const TensorInfo& t : shard.tensors()) tensors.push_back({t.name, t.dtype, t.shape, bytes[t.name].data()});
        }
        writeSafetensors(path, tensors, {}); // as an older cache wrote it: no prompt texts
    }
    const ModelDims dims = resolveModel(spec.model);
    EXPECT_EQ(openLatentData(spec.data, dims, 7, spec.model.from)->promptText(34), "photo 34, noisy");

    said.clear();
    writeLatentCache(spec, {}, record());
    EXPECT_NE(said.find("the prompts' texts added to 3 shards made before shards kept them"), std::string::npos) << said;
    for (int s = 0; s < 3; ++s) {
        const SafetensorsFile shard(made.folder + "/" + cacheShardName(s));
        for (const TensorInfo& t : shard.tensors()) {
            const TensorView v = shard.view(t);
            const auto* b = reinterpret_cast<const uint8_t*>(v.data);
            EXPECT_EQ(std::vector<uint8_t>(b, b + v.byteSize), bytes[t.name]) << t.name;
        }
    }
    const SafetensorsFile shard1(made.folder + "/" + cacheShardName(1));
    bool found = false;
    for (const auto& [key, value] : shard1.metadata())
        if (key == cacheSampleName(34) + ".prompt") found = value == "photo 34, noisy";
    EXPECT_TRUE(found) << "sample 34's text is not in shard 1's metadata";
    said.clear();
    writeLatentCache(spec, {}, record());
    EXPECT_EQ(said.find("texts added"), std::string::npos) << said;
}

TEST_F(LatentCache, ALoraRunTrainsThroughTheCacheAndEncodesInTheStepWithoutOne) {
    TempDir runs;
    std::ifstream in(tmp.path() + "/spec.toml");
    const std::string toml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const WorkerRun uncached = runWorker(toml, 1, runs.path() + "/uncached");
    ASSERT_EQ(uncached.exitCode, 0) << uncached.output;
    EXPECT_NE(uncached.output.find("no complete latent cache (0 of 70 samples)"), std::string::npos) << uncached.output;
    EXPECT_NE(uncached.output.find("`parallax-cli cache SPEC` once makes every step faster"), std::string::npos)
        << uncached.output;

    writeLatentCache(spec, {}, record());
    const WorkerRun run = runWorker(toml, 1, runs.path() + "/run");
    ASSERT_EQ(run.exitCode, 0) << run.output;
    EXPECT_NE(run.output.find("latents: 70 samples in 3 shards"), std::string::npos) << run.output;
    ASSERT_EQ(run.losses().size(), 4u);
    for (double loss : run.losses()) EXPECT_TRUE(std::isfinite(loss) && loss > 0) << loss;
}

// Only the rank that verifies reads the dataset's files: with its images gone, the cache that was made
// for them still opens unverified (what every other rank of a run does), and verifying refuses it.
TEST_F(LatentCache, OnlyTheVerifyingRankReadsTheDatasetsFiles) {
    writeLatentCache(spec, {}, record());
    const ModelDims dims = resolveModel(spec.model);
    for (const auto& entry : std::filesystem::directory_iterator(data))
        if (entry.path().extension() == ".png") std::filesystem::remove(entry.path());
    const std::unique_ptr<Dataset> opened = openLatentData(spec.data, dims, 1, spec.model.from, /*verify=*/false);
    EXPECT_EQ(opened->size(), kImages);
    EXPECT_THROW(openLatentData(spec.data, dims, 1, spec.model.from, /*verify=*/true), DataError);
}

// Micro-batches of two from three aspect buckets: each holds one bucket, and two data-parallel ranks
// train the numbers of one process.
TEST_F(LatentCache, MicroBatchesOfOneBucketTrainTheSameOnTwoRanks) {
    writeLatentCache(spec, {}, record());
    TempDir runs;
    const auto toml = [this](int64_t dp) {
        std::ifstream in(writeSpec("", 2, dp));
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    };
    const WorkerRun one = runWorker(toml(1), 1, runs.path() + "/one");
    ASSERT_EQ(one.exitCode, 0) << one.output;
    EXPECT_NE(one.output.find("aspect buckets: 3, each micro-batch of one; an epoch leaves out 2 samples"),
              std::string::npos) << one.output;
    const WorkerRun two = runWorker(toml(2), 2, runs.path() + "/two");
    ASSERT_EQ(two.exitCode, 0) << two.output;
    ASSERT_EQ(one.losses().size(), 4u);
    EXPECT_LT(maxRelativeDifference(one.losses(), two.losses()), 1e-5);
}

} // namespace
} // namespace parallax

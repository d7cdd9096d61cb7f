// [samples]: a qwen_image LoRA run on a cached image-caption dataset draws its images before the first
// step, every samples.every steps and after the last; each is a PNG of its sample's size, and the
// first (adapters still zero) is what QwenImageSampler draws from the pipeline's own transformer and
// VAE for that sample's prompt states and seed; two data-parallel ranks draw the images one does.

#include "core/captions/LatentCache.h"
#include "core/image/ImageDecoder.h"
#include "core/image/PngEncoder.h"
#include "core/spec/ModelKinds.h"
#include "core/spec/SpecIO.h"
#include "core/store/RunStore.h"
#include "core/util/Base64.h"
#include "tests/core/conversations/PngFile.h"
#include "tests/trainer/cache/TinyPipeline.h"
#include "tests/trainer/support/SpecText.h"
#include "tests/trainer/support/WorkerRun.h"
#include "trainer/cache/LatentCacheWriter.h"
#include "trainer/data/Dataset.h"
#include "trainer/models/PublishedWeights.h"
#include "trainer/models/QwenImageVaeWeights.h"
#include "trainer/sampling/QwenImageSampler.h"
#include "trainer/sampling/SampleImage.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace parallax {
namespace {

using namespace testing;

class RunSamples : public ::testing::Test {
protected:
    static TinyPipeline& pipeline() { return sharedTinyPipeline(); }
    void SetUp() override {
        if (!pipeline().problem.empty()) GTEST_SKIP() << pipeline().problem;
        data = tmp.path() + "/photos";
        std::filesystem::create_directories(data);
        const int sides[2][2] = {{48, 32}, {32, 32}};
        for (int i = 0; i < 8; ++i) {
            const std::string name = data + "/img" + std::to_string(i);
            writeRampPng(name + ".png", sides[i % 2][0], sides[i % 2][1], static_cast<unsigned>(i + 1));
            std::ofstream(name + ".txt") << "photo " << i;
        }
        writeLatentCache(readSpecFile(writeSpec(1)), {}, [](const std::string&) {});
    }
    std::string writeSpec(int64_t dp) {
        TinySpec s;
        s.dp = dp;
        s.kind = "qwen_image";
        s.extraModel = "from = \"" + pipeline().path + "\"\nseq_len = 64";
        s.data = "latents";
        s.extraData = "path = \"" + data + "\"\nmax_pixels = 1536\nshuffle = false";
        s.finetune = "mode = \"lora\"\nlora_r = 4\nlora_alpha = 8";
        s.steps = 4;
        s.globalBatch = 2;
        s.microBatch = 1;
        const std::string path = tmp.path() + "/spec-dp" + std::to_string(dp) + ".toml";
        std::ofstream(path) << s.toToml() << "\n[samples]\nevery = 2\ncount = 2\nsteps = 3\n";
        return path;
    }
    WorkerRun run(int64_t dp) {
        std::ifstream in(writeSpec(dp));
        const std::string toml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        return runWorker(toml, static_cast<int>(dp), tmp.path() + "/run-dp" + std::to_string(dp));
    }
    TempDir tmp;
    std::string data;
};

// (step, index) -> the image's PNG bytes.
std::map<std::pair<int64_t, int64_t>, std::vector<uint8_t>> pngs(const WorkerRun& r) {
    std::map<std::pair<int64_t, int64_t>, std::vector<uint8_t>> out;
    for (const SampleEvent& e : r.samples) {
        const auto bytes = base64Decode(e.png);
        EXPECT_TRUE(bytes) << "sample " << e.step << "/" << e.index << " is not base64";
        if (bytes) out[{e.step, e.index}] = *bytes;
    }
    return out;
}

TEST_F(RunSamples, DrawnAtTheirStepsAndTheFirstIsTheSamplersImageOfTheBaseModel) {
    const WorkerRun r = run(1);
    ASSERT_EQ(r.exitCode, 0) << r.output;
    const auto images = pngs(r);
    std::vector<std::pair<int64_t, int64_t>> keys;
    for (const auto& [key, bytes] : images) keys.push_back(key);
    EXPECT_EQ(keys, (std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {0, 1}, {2, 0}, {2, 1}, {4, 0}, {4, 1}}));
    for (const SampleEvent& e : r.samples) {
        EXPECT_EQ(e.seed, 1234 + e.index); // TinySpec's train.seed
        EXPECT_EQ(e.steps, 3);
        EXPECT_EQ(e.prompt, "photo " + std::to_string(e.index)); // img<i>.txt, as the cache keeps it
        const DecodedImage png = decodeImage(images.at({e.step, e.index}).data(), images.at({e.step, e.index}).size(), "sample");
        EXPECT_EQ(png.rgb.width, e.width);
        EXPECT_EQ(png.rgb.height, e.height);
    }
    // img0 (48 x 32) and img1 (32 x 32), at their buckets.
    EXPECT_EQ(r.samples.front().width, 48);
    EXPECT_EQ(r.samples.front().height, 32);
    EXPECT_NE(images.at({0, 0}), images.at({4, 0})) << "the adapters trained: the images change";

    // Step 0: the adapters' B is zero, so the run's transformer is the pipeline's own.
    const RunSpec spec = readSpecFile(writeSpec(1));
    const ModelDims dims = resolveModel(spec.model);
    const std::shared_ptr<Model> model = constructModel(dims);
    loadPublishedWeights(*model, pipeline().path);
    QwenImageVaeOptions options;
    options.encoder = false;
    const auto vae = loadQwenImageVae(pipeline().path, options);
    const std::unique_ptr<Dataset> dataset = makeDataset(spec.data, dims, spec.train.seed, spec.model.from);
    for (int64_t index : {0, 1}) {
        const Batch batch = dataset->makeBatch({index}, 0);
        torch::Tensor prompt = batch.text_states[0];
        if (batch.attention_mask.defined()) prompt = prompt.index({batch.attention_mask[0]});
        QwenImageSampler sampler(*model, *vae);
        const auto s = sampler.sample(prompt, torch::Tensor(), batch.images.size(3) * 8, batch.images.size(2) * 8, 3,
                                      1.0, 1234 + static_cast<uint64_t>(index));
        EXPECT_EQ(encodePng(sampleToRgb(s.image)), images.at({0, index})) << "sample " << index;
    }
}

TEST_F(RunSamples, TwoDataParallelRanksDrawWhatOneDraws) {
    const WorkerRun one = run(1);
    const WorkerRun two = run(2);
    ASSERT_EQ(one.exitCode, 0) << one.output;
    ASSERT_EQ(two.exitCode, 0) << two.output;
    const auto a = pngs(one), b = pngs(two);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(a.at({0, 0}), b.at({0, 0}));
    EXPECT_EQ(a.at({0, 1}), b.at({0, 1}));
    // Later, the weights of two ranks equal one's to rounding: the pixels within a level or two.
    for (const auto& [key, bytes] : a) {
        const DecodedImage x = decodeImage(bytes.data(), bytes.size(), "one");
        const DecodedImage y = decodeImage(b.at(key).data(), b.at(key).size(), "two");
        ASSERT_EQ(x.rgb.samples.size(), y.rgb.samples.size());
        int most = 0;
        for (size_t i = 0; i < x.rgb.samples.size(); ++i)
            most = std::max(most, std::abs(int(x.rgb.samples[i]) - int(y.rgb.samples[i])));
        EXPECT_LE(most, 2) << "step " << key.first << " sample " << key.second;
    }
}

// Through the supervisor: the images are rows of the store, and `parallax-cli samples --out` writes
// each as the PNG the worker made.
TEST_F(RunSamples, TheStoreKeepsThemAndTheCliWritesThemOut) {
    const std::string cli = buildDir() + "/app/parallax-cli", store = tmp.path() + "/store.db";
    const ProcessResult ran = runProcess({cli, "--store", store, "run", writeSpec(1)});
    ASSERT_EQ(ran.exitCode, 0) << ran.output;
    const ProcessResult listed = runProcess({cli, "--store", store, "samples", "1", "--out", tmp.path() + "/out"});
    ASSERT_EQ(listed.exitCode, 0) << listed.output;
    EXPECT_NE(listed.output.find("48 x 32"), std::string::npos) << listed.output;
    const RunStore db(store);
    const std::vector<SampleEvent> rows = db.events<SampleEvent>(1);
    ASSERT_EQ(rows.size(), 6u);
    for (const SampleEvent& e : rows) {
        char name[64];
        std::snprintf(name, sizeof name, "/out/sample_s%06lld_i%02lld.png", static_cast<long long>(e.step),
                      static_cast<long long>(e.index));
        std::ifstream in(tmp.path() + name, std::ios::binary);
        const std::vector<uint8_t> written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        EXPECT_EQ(written, *base64Decode(e.png)) << name;
    }
    const ProcessResult one = runProcess({cli, "--store", store, "samples", "1", "--step", "3"});
    EXPECT_EQ(one.exitCode, 1);
    EXPECT_NE(one.output.find("has no samples at step 3"), std::string::npos) << one.output;
}

} // namespace
} // namespace parallax

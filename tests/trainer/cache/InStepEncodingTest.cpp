// A qwen_image run on an image-caption dataset without its latent cache: the VAE and the text encoder
// run inside the step and give exactly the batches the cache gives (latents, prompt states, mask,
// noise, sigma); a run so trains the losses of the same run through the cache, with the same
// trainable parameters and optimizer state, and draws the same samples; two data-parallel ranks
// train the losses of one process, and so do two tensor-parallel ranks over two pipeline stages; the
// encoders' weights are frozen and take no gradient; a cache made for something else is left as it
// is; an edit dataset is refused by a text-to-image pipeline.

#include "core/captions/LatentCache.h"
#include "core/spec/SpecIO.h"
#include "tests/core/conversations/PngFile.h"
#include "tests/trainer/cache/TinyPipeline.h"
#include "tests/trainer/cache/QwenImageLoraSpec.h"
#include "tests/trainer/support/WorkerRun.h"
#include "core/spec/Estimates.h"
#include "tests/support/Process.h"
#include "trainer/cache/InStepEncoder.h"
#include "trainer/train/BatchFlops.h"
#include "trainer/cache/LatentCacheWriter.h"
#include "trainer/data/DataError.h"
#include "trainer/data/DatasetUtils.h"
#include "trainer/data/LatentData.h"
#include "trainer/train/Checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace parallax {
namespace {

using namespace testing;

constexpr int kImages = 12; // four in each of three buckets

class InStepEncoding : public ::testing::Test {
protected:
    static TinyPipeline& pipeline() { return sharedTinyPipeline(); }
    void SetUp() override {
        // The tiny pipeline folder is made by tests/reference (make test installs what it needs):
        // a failure to make it fails the test rather than passing it unseen.
        ASSERT_TRUE(pipeline().problem.empty()) << pipeline().problem;
        data = tmp.path() + "/photos";
        std::filesystem::create_directories(data);
        const int sides[3][2] = {{48, 32}, {40, 40}, {30, 52}}; // buckets 48 x 32, 32 x 32, 16 x 48 within 48 x 32
        for (int i = 0; i < kImages; ++i) {
            const std::string name = data + "/img" + std::to_string(10 + i);
            writeRampPng(name + ".png", sides[i % 3][0], sides[i % 3][1], static_cast<unsigned>(i + 1));
            // Prompts of several lengths, one longer than model.seq_len's 64 states.
            std::string caption = "photo " + std::to_string(i) + (i % 2 ? " of a red ramp" : ", noisy");
            if (i == 4)
                for (int k = 0; k < 30; ++k) caption += " and a blue ramp";
            std::ofstream(name + ".txt") << caption;
        }
        spec = readSpecFile(writeSpec(1, 1));
        dims = resolveModel(spec.model);
    }
    std::string writeSpec(int64_t microBatch, int64_t dp, bool samples = false, int64_t tp = 1, int64_t pp = 1) {
        return writeQwenImageLoraSpec(tmp.path(), pipeline().path, data, 64, {microBatch, dp, tp, pp, samples, 3});
    }
    WorkerRun run(int64_t microBatch, int64_t dp, const std::string& name, bool samples = false) {
        std::ifstream in(writeSpec(microBatch, dp, samples));
        const std::string toml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        return runWorker(toml, static_cast<int>(dp), tmp.path() + "/" + name);
    }
    void makeCache() { writeLatentCache(spec, {}, [](const std::string&) {}); }
    TempDir tmp;
    std::string data;
    RunSpec spec;
    ModelDims dims;
};

// The optimizer state's values of a checkpoint: what trains, whatever else the run held.
int64_t trainedValues(const std::string& checkpoint) {
    const CheckpointReader reader(checkpoint);
    int64_t values = 0;
    for (const std::string& name : reader.names("exp_avg")) {
        int64_t n = 1;
        for (int64_t side : reader.shape(name, "exp_avg")) n *= side;
        values += n;
    }
    return values;
}

TEST_F(InStepEncoding, TheStepsBatchIsTheBatchOfTheCache) {
    const std::unique_ptr<Dataset> inStep = openLatentData(spec.data, dims, 7, spec.model.from);
    EXPECT_NE(inStep->stepEncodingNote().find("data.path has no complete latent cache (0 of 12 samples): the VAE and "
                                              "the text encoder run inside every step; `parallax-cli cache SPEC` once "
                                              "makes every step faster"),
              std::string::npos)
        << inStep->stepEncodingNote();
    EXPECT_NE(inStep->describe().find("image captions: 12 samples in 3 buckets"), std::string::npos) << inStep->describe();
    const std::unique_ptr<BatchEncoder> encoder = inStep->makeStepEncoder(torch::kCPU, torch::kFloat32);
    ASSERT_TRUE(encoder != nullptr);
    makeCache();
    const std::unique_ptr<Dataset> cached = openLatentData(spec.data, dims, 7, spec.model.from);
    EXPECT_TRUE(cached->stepEncodingNote().empty());
    EXPECT_TRUE(cached->makeStepEncoder(torch::kCPU, torch::kFloat32) == nullptr);

    ASSERT_EQ(inStep->size(), cached->size());
    EXPECT_EQ(inStep->sampleGroups(), cached->sampleGroups());
    BatchFlops flops(dims, spec.finetune);
    for (int64_t i = 0; i < kImages; ++i) EXPECT_EQ(inStep->promptText(i), cached->promptText(i)) << i;
    // Micro-batches of each bucket, sample 4's prompt cut at model.seq_len.
    for (const std::vector<int64_t>& indices : {std::vector<int64_t>{0, 3}, {1, 4, 7}, {10}, {5, 2, 11}})
        for (int64_t step : {0, 5}) {
            const Batch host = inStep->makeBatch(indices, step);
            const Batch want = cached->makeBatch(indices, step);
            EXPECT_EQ(lossElements(dims, host), lossElements(dims, want));
            EXPECT_EQ(filledPositions(dims, host), filledPositions(dims, want));
            // Priced at the bucket's packed grid and the micro-batch's prompt width.
            const double priced = double(want.images.size(0)) *
                                  trainingFlopsPerLatentSample(dims, spec.finetune, want.text_states.size(1),
                                                               want.images.size(2) / 2 * (want.images.size(3) / 2));
            EXPECT_EQ(flops.of(host), priced);
            EXPECT_EQ(flops.of(want), priced);
            const Batch got = encoder->encode(host);
            EXPECT_FALSE(got.pixels.defined());
            EXPECT_FALSE(got.tokens.defined());
            EXPECT_EQ(got.sample_index, want.sample_index);
            const std::string where = "samples " + std::to_string(indices.front()) + ".., step " + std::to_string(step);
            EXPECT_TRUE(torch::equal(got.images, want.images)) << where;
            EXPECT_TRUE(torch::equal(got.text_states, want.text_states)) << where;
            ASSERT_EQ(got.attention_mask.defined(), want.attention_mask.defined()) << where;
            if (want.attention_mask.defined())
                EXPECT_TRUE(torch::equal(got.attention_mask, want.attention_mask)) << where;
            EXPECT_TRUE(torch::equal(got.noise, want.noise)) << where;
            EXPECT_TRUE(torch::equal(got.timesteps, want.timesteps)) << where;
        }
    EXPECT_EQ(cached->makeBatch({1, 4, 7}, 0).text_states.size(1), 64) << "sample 4's prompt is cut at model.seq_len";
}

TEST_F(InStepEncoding, TheEncodersAreFrozenAndTakeNoGradient) {
    const std::unique_ptr<Dataset> dataset = openLatentData(spec.data, dims, 7, spec.model.from);
    const std::unique_ptr<BatchEncoder> encoder = dataset->makeStepEncoder(torch::kCPU, torch::kFloat32);
    const auto* inStep = dynamic_cast<const InStepEncoder*>(encoder.get());
    ASSERT_NE(inStep, nullptr);
    const std::vector<torch::Tensor> frozen = inStep->parameters();
    ASSERT_FALSE(frozen.empty());
    for (const torch::Tensor& p : frozen) EXPECT_FALSE(p.requires_grad());

    const std::shared_ptr<Model> model = buildModel(dims, 3);
    int64_t trainable = 0;
    for (const torch::Tensor& p : model->parameters()) trainable += p.numel();
    const Batch batch = encoder->encode(dataset->makeBatch({0, 3}, 0));
    EXPECT_FALSE(batch.images.requires_grad());
    EXPECT_FALSE(batch.text_states.requires_grad());
    const Activation out = model->forwardAll(batch);
    out.at(0).backward();
    int64_t withGradient = 0, afterwards = 0;
    for (const torch::Tensor& p : model->parameters()) {
        afterwards += p.numel();
        if (p.grad().defined()) ++withGradient;
    }
    EXPECT_GT(withGradient, 0);
    EXPECT_EQ(afterwards, trainable);
    for (const torch::Tensor& p : frozen) EXPECT_FALSE(p.grad().defined());
}

// `check` counts the encoders every rank loads without the cache: the text encoder's parameters and
// those of the VAE's encoder, fp32 on a CPU; once the cache is made the row is gone.
TEST_F(InStepEncoding, CheckCountsTheEncodersOfARunWithoutTheCache) {
    const std::unique_ptr<Dataset> dataset = openLatentData(spec.data, dims, 7, spec.model.from);
    const std::unique_ptr<BatchEncoder> encoder = dataset->makeStepEncoder(torch::kCPU, torch::kFloat32);
    int64_t values = 0;
    for (const torch::Tensor& p : dynamic_cast<const InStepEncoder&>(*encoder).parameters()) values += p.numel();
    const std::string cli = buildDir() + "/app/parallax-cli", specPath = writeSpec(1, 1);
    const ProcessResult before = runProcess({cli, "check", specPath});
    const std::string row = "encoders         " + formatBytes(double(values) * 4.0) +
                            " (no complete latent cache, 0 of 12 samples: every rank loads the text encoder";
    EXPECT_NE(before.output.find(row), std::string::npos) << row << "\nnot in:\n" << before.output;
    EXPECT_NE(before.output.find("memory/device with the encoders"), std::string::npos) << before.output;
    makeCache();
    const ProcessResult after = runProcess({cli, "check", specPath});
    EXPECT_NE(after.output.find("memory/device"), std::string::npos) << after.output;
    EXPECT_EQ(after.output.find("encoders "), std::string::npos) << after.output;
}

TEST_F(InStepEncoding, ARunWithoutTheCacheTrainsAsOneThroughIt) {
    const WorkerRun inStep = run(1, 1, "in-step", /*samples=*/true);
    ASSERT_EQ(inStep.exitCode, 0) << inStep.output;
    EXPECT_NE(inStep.output.find("data.path has no complete latent cache (0 of 12 samples): the VAE and the text "
                                 "encoder run inside every step"),
              std::string::npos) << inStep.output;
    EXPECT_FALSE(std::filesystem::exists(latentCacheFolder(data))) << "a run without the cache makes none";

    makeCache();
    const WorkerRun cached = run(1, 1, "cached", /*samples=*/true);
    ASSERT_EQ(cached.exitCode, 0) << cached.output;
    EXPECT_NE(cached.output.find("latents: 12 samples in 1 shards"), std::string::npos) << cached.output;
    EXPECT_EQ(cached.output.find("no complete latent cache"), std::string::npos) << cached.output;
    ASSERT_EQ(inStep.losses().size(), 4u);
    EXPECT_LT(maxRelativeDifference(inStep.losses(), cached.losses()), 1e-5);

    // The same images drawn at steps 0, 2 and 4 from the same prompts' states.
    ASSERT_EQ(inStep.samples.size(), 6u) << inStep.output;
    ASSERT_EQ(cached.samples.size(), inStep.samples.size());
    for (size_t i = 0; i < inStep.samples.size(); ++i) {
        EXPECT_EQ(inStep.samples[i].step, cached.samples[i].step);
        EXPECT_EQ(inStep.samples[i].index, cached.samples[i].index);
        EXPECT_EQ(inStep.samples[i].prompt, cached.samples[i].prompt);
        EXPECT_EQ(inStep.samples[i].png, cached.samples[i].png) << "sample " << i;
    }

    // The same trainable tensors and optimizer state: the encoders are in neither checkpoint.
    const CheckpointReader a(inStep.lastCheckpoint()), b(cached.lastCheckpoint());
    EXPECT_EQ(a.names("param"), b.names("param"));
    EXPECT_EQ(a.names("exp_avg"), b.names("exp_avg"));
    EXPECT_EQ(trainedValues(inStep.lastCheckpoint()), trainedValues(cached.lastCheckpoint()));
    EXPECT_GT(trainedValues(inStep.lastCheckpoint()), 0);
}

TEST_F(InStepEncoding, TwoDataParallelRanksWithoutTheCacheTrainAsOne) {
    const WorkerRun one = run(2, 1, "one");
    ASSERT_EQ(one.exitCode, 0) << one.output;
    const WorkerRun two = run(2, 2, "two");
    ASSERT_EQ(two.exitCode, 0) << two.output;
    EXPECT_NE(two.output.find("no complete latent cache (0 of 12 samples)"), std::string::npos) << two.output;
    ASSERT_EQ(one.losses().size(), 4u);
    EXPECT_LT(maxRelativeDifference(one.losses(), two.losses()), 1e-5);
}

// Every tensor-parallel rank and pipeline stage encodes the batches it reads, to the same values.
TEST_F(InStepEncoding, TensorAndPipelineRanksWithoutTheCacheTrainAsOne) {
    const WorkerRun one = run(1, 1, "one");
    ASSERT_EQ(one.exitCode, 0) << one.output;
    std::ifstream in(writeSpec(1, 1, false, /*tp=*/2, /*pp=*/2));
    const std::string toml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const WorkerRun four = runWorker(toml, 4, tmp.path() + "/tp2-pp2");
    ASSERT_EQ(four.exitCode, 0) << four.output;
    EXPECT_NE(four.output.find("no complete latent cache (0 of 12 samples)"), std::string::npos) << four.output;
    ASSERT_EQ(one.losses().size(), 4u);
    EXPECT_LT(maxRelativeDifference(one.losses(), four.losses()), 1e-5);
}

TEST_F(InStepEncoding, ACacheMadeForSomethingElseIsLeftAsItIs) {
    makeCache();
    const std::string shard = latentCacheFolder(data) + "/" + cacheShardName(0);
    const auto written = std::filesystem::last_write_time(shard);
    std::ofstream(data + "/img17.txt") << "another caption";
    const std::unique_ptr<Dataset> opened = openLatentData(spec.data, dims, 7, spec.model.from);
    EXPECT_NE(opened->stepEncodingNote().find("(0 of 12 samples)"), std::string::npos) << opened->stepEncodingNote();
    EXPECT_EQ(opened->promptText(7), "another caption");
    EXPECT_EQ(std::filesystem::last_write_time(shard), written);
}

TEST_F(InStepEncoding, AnEditDatasetIsRefusedByATextToImagePipeline) {
    std::ofstream(data + "/metadata.jsonl") << R"({"image": "img10.png", "prompt": "make it blue", "edit_image": "img11.png"})"
                                            << "\n";
    try {
        openLatentData(spec.data, dims, 7, spec.model.from);
        FAIL() << "an edit dataset opened";
    } catch (const DataError& e) {
        EXPECT_NE(std::string(e.what()).find("1 edit_image path, and model.from (" + pipeline().path +
                                             ") is a QwenImagePipeline, which makes images from text alone"),
                  std::string::npos) << e.what();
    }
}

} // namespace
} // namespace parallax

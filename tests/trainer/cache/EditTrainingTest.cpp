// Qwen-Image-Edit training on an image-caption dataset with reference images (edit_image): through
// `parallax-cli cache` the cache holds each sample's reference latents and the prompt states of the
// Edit Plus template with the images through the text encoder's tower; without the cache the step's
// encoder gives those batches to the bit; a LoRA run trains the same losses on one process, two
// data-parallel ranks and two tensor-parallel ranks over two pipeline stages, with and without the
// cache (and draws the same samples); a text-to-image pipeline refuses such a dataset naming it.

#include "core/captions/LatentCache.h"
#include "core/util/Files.h"
#include "core/spec/SpecIO.h"
#include "tests/core/conversations/PngFile.h"
#include "tests/trainer/cache/TinyPipeline.h"
#include "tests/trainer/cache/QwenImageLoraSpec.h"
#include "tests/trainer/support/WorkerRun.h"
#include "trainer/cache/LatentCacheWriter.h"
#include "trainer/cache/QwenImageTextEncoder.h"
#include "trainer/train/BatchFlops.h"
#include "core/spec/Estimates.h"
#include "core/image/ImageDecoder.h"
#include "trainer/data/DataError.h"
#include "trainer/data/LatentData.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

namespace parallax {
namespace {

using namespace testing;

constexpr int kSamples = 8;

class EditTraining : public ::testing::Test {
protected:
    static TinyPipeline& pipeline() {
        static TinyPipeline p; // this process's own: its model_index.json is an Edit Plus pipeline's
        return p;
    }
    void SetUp() override {
        ASSERT_TRUE(pipeline().problem.empty()) << pipeline().problem;
        setPipelineClass(pipeline().path, "QwenImageEditPlusPipeline");
        data = tmp.path() + "/edits";
        std::filesystem::create_directories(data);
        // Targets in two buckets (48 x 32 and 16 x 48 within 1536 pixels); samples 0-3 with one reference
        // image, 4-7 with two, the references of other sizes than their targets.
        const int sides[2][2] = {{48, 32}, {30, 52}};
        std::ofstream meta(data + "/metadata.jsonl");
        for (int i = 0; i < kSamples; ++i) {
            const std::string target = "img" + std::to_string(i) + ".png", a = "ref" + std::to_string(i) + "a.png",
                              b = "ref" + std::to_string(i) + "b.png";
            writeRampPng(data + "/" + target, sides[i % 2][0], sides[i % 2][1], static_cast<unsigned>(i + 1));
            writeRampPng(data + "/" + a, 40 + i, 36, static_cast<unsigned>(50 + i));
            writeRampPng(data + "/" + b, 28, 44 - i, static_cast<unsigned>(90 + i));
            nlohmann::json line = {{"image", target}, {"prompt", "make picture " + std::to_string(i) + " bluer"}};
            line["edit_image"] = i < 4 ? nlohmann::json(a) : nlohmann::json::array({a, b});
            meta << line.dump() << "\n";
        }
        meta.close();
        spec = readSpecFile(writeSpec(1, 1));
        dims = resolveModel(spec.model);
    }
    std::string writeSpec(int64_t microBatch, int64_t dp, bool samples = false, int64_t tp = 1, int64_t pp = 1) {
        return writeQwenImageLoraSpec(tmp.path(), pipeline().path, data, 512, {microBatch, dp, tp, pp, samples, 2});
    }
    WorkerRun run(int64_t microBatch, int64_t dp, const std::string& name, bool samples = false, int64_t tp = 1,
                  int64_t pp = 1) {
        std::ifstream in(writeSpec(microBatch, dp, samples, tp, pp));
        const std::string toml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        return runWorker(toml, static_cast<int>(dp * tp * pp), tmp.path() + "/" + name);
    }
    void makeCache() { writeLatentCache(spec, {}, [](const std::string&) {}); }
    TempDir tmp;
    std::string data;
    RunSpec spec;
    ModelDims dims;
};

TEST_F(EditTraining, TheCacheAndTheStepsEncoderGiveTheSameEditBatches) {
    const std::unique_ptr<Dataset> inStep = openLatentData(spec.data, dims, 7, spec.model.from);
    const std::unique_ptr<BatchEncoder> encoder = inStep->makeStepEncoder(torch::kCPU, torch::kFloat32);
    ASSERT_TRUE(encoder != nullptr);
    makeCache();
    const std::unique_ptr<Dataset> cached = openLatentData(spec.data, dims, 7, spec.model.from);
    ASSERT_TRUE(cached->stepEncodingNote().empty()) << cached->stepEncodingNote();
    ASSERT_EQ(cached->size(), kSamples);
    const std::vector<int64_t> groups = cached->sampleGroups();
    EXPECT_EQ(inStep->sampleGroups(), groups);
    EXPECT_EQ(std::set<int64_t>(groups.begin(), groups.end()).size(), 4u)
        << "two buckets, each with one and with two reference images";

    // Sample 5's prompt states are the Edit Plus template's with both images through the tower.
    const QwenImageTextEncoder text(pipeline().path);
    ASSERT_EQ(text.pipeline(), QwenImagePipeline::EditPlus);
    const torch::Tensor states = text.encodeEdit("make picture 5 bluer", {decodeImageFile(data + "/ref5a.png").rgb,
                                                                          decodeImageFile(data + "/ref5b.png").rgb});
    ASSERT_GT(states.size(0), 100) << "the two images' tokens are among the states";
    ASSERT_LE(states.size(0), 512);
    const Batch one = cached->makeBatch({5}, 0);
    ASSERT_EQ(one.text_states.size(1), states.size(0));
    EXPECT_TRUE(torch::equal(one.text_states[0], states));
    ASSERT_EQ(one.reference_latents.size(), 2u);
    EXPECT_EQ(one.reference_latents[0].sizes(), one.images.sizes()) << "a reference is fitted to its target's bucket";
    // MFU prices the reference images' tokens too: three images' worth of packed tokens.
    const int64_t made = one.images.size(2) / 2 * (one.images.size(3) / 2);
    BatchFlops flops(dims, spec.finetune);
    EXPECT_EQ(flops.of(one), trainingFlopsPerLatentSample(dims, spec.finetune, one.text_states.size(1), 3 * made));
    EXPECT_EQ(flops.of(inStep->makeBatch({5}, 0)), flops.of(one));

    for (const std::vector<int64_t>& indices : {std::vector<int64_t>{0, 2}, {5, 7}, {4}})
        for (int64_t step : {0, 3}) {
            const Batch host = inStep->makeBatch(indices, step);
            const Batch want = cached->makeBatch(indices, step);
            const Batch got = encoder->encode(host);
            const std::string where = "samples " + std::to_string(indices.front()) + ".., step " + std::to_string(step);
            EXPECT_TRUE(got.reference_pixels.empty() && !got.pixel_values.defined()) << where;
            EXPECT_TRUE(torch::equal(got.images, want.images)) << where;
            ASSERT_EQ(got.reference_latents.size(), want.reference_latents.size()) << where;
            ASSERT_EQ(got.reference_latents.size(), indices.front() < 4 ? 1u : 2u) << where;
            for (size_t k = 0; k < want.reference_latents.size(); ++k)
                EXPECT_TRUE(torch::equal(got.reference_latents[k], want.reference_latents[k])) << where << ", reference " << k;
            EXPECT_TRUE(torch::equal(got.text_states, want.text_states)) << where;
            ASSERT_EQ(got.attention_mask.defined(), want.attention_mask.defined()) << where;
            if (want.attention_mask.defined())
                EXPECT_TRUE(torch::equal(got.attention_mask, want.attention_mask)) << where;
            EXPECT_TRUE(torch::equal(got.noise, want.noise)) << where;
            EXPECT_TRUE(torch::equal(got.timesteps, want.timesteps)) << where;
        }
}

TEST_F(EditTraining, ALoraRunTrainsAsOneOnEveryLayoutWithAndWithoutTheCache) {
    const WorkerRun inStep = run(1, 1, "in-step", /*samples=*/true);
    ASSERT_EQ(inStep.exitCode, 0) << inStep.output;
    makeCache();
    const WorkerRun one = run(1, 1, "one", /*samples=*/true);
    ASSERT_EQ(one.exitCode, 0) << one.output;
    ASSERT_EQ(one.losses().size(), 4u);
    EXPECT_LT(maxRelativeDifference(inStep.losses(), one.losses()), 1e-5);
    ASSERT_EQ(one.samples.size(), 6u) << one.output;
    ASSERT_EQ(inStep.samples.size(), one.samples.size());
    for (size_t i = 0; i < one.samples.size(); ++i) EXPECT_EQ(inStep.samples[i].png, one.samples[i].png) << "sample " << i;

    const WorkerRun four = run(1, 1, "tp2-pp2", false, /*tp=*/2, /*pp=*/2);
    ASSERT_EQ(four.exitCode, 0) << four.output;
    EXPECT_LT(maxRelativeDifference(one.losses(), four.losses()), 1e-5);
    const WorkerRun single = run(2, 1, "one-mb2");
    ASSERT_EQ(single.exitCode, 0) << single.output;
    const WorkerRun dp2 = run(2, 2, "dp2");
    ASSERT_EQ(dp2.exitCode, 0) << dp2.output;
    EXPECT_LT(maxRelativeDifference(single.losses(), dp2.losses()), 1e-5);
}

// Qwen-Image-Edit-2511 (the transformer's zero_cond_t): the timestep-0 embedding that modulates the
// reference tokens travels between pipeline stages and tensor-parallel ranks with the batch's:
// tp 2 x pp 2 trains the losses of one process, and those differ from the folder's without the flag.
TEST_F(EditTraining, AnEdit2511FolderTrainsAsOneOnTensorAndPipelineRanks) {
    makeCache();
    const WorkerRun plain = run(1, 1, "plain");
    ASSERT_EQ(plain.exitCode, 0) << plain.output;
    const std::string config = pipeline().path + "/transformer/config.json";
    struct Restore {
        std::string path, text;
        ~Restore() { std::ofstream(path) << text; }
    } restore{config, readFile(config)};
    nlohmann::json edit2511 = nlohmann::json::parse(restore.text);
    edit2511["zero_cond_t"] = true;
    std::ofstream(config) << edit2511.dump(2);

    const WorkerRun one = run(1, 1, "one", /*samples=*/true);
    ASSERT_EQ(one.exitCode, 0) << one.output;
    ASSERT_EQ(one.losses().size(), 4u);
    EXPECT_EQ(one.samples.size(), 6u) << one.output;
    EXPECT_GT(maxRelativeDifference(plain.losses(), one.losses()), 1e-4) << "zero_cond_t changed nothing";
    const WorkerRun four = run(1, 1, "tp2-pp2", false, /*tp=*/2, /*pp=*/2);
    ASSERT_EQ(four.exitCode, 0) << four.output;
    EXPECT_LT(maxRelativeDifference(one.losses(), four.losses()), 1e-5);
}

TEST_F(EditTraining, ATextToImagePipelineRefusesReferenceImagesNamingTheFix) {
    setPipelineClass(pipeline().path, "QwenImagePipeline");
    try {
        openLatentData(spec.data, dims, 7, spec.model.from);
        FAIL() << "an edit dataset opened on a text-to-image pipeline";
    } catch (const DataError& e) {
        for (const char* w : {"metadata.jsonl", "1 edit_image path", "QwenImagePipeline", "QwenImageEditPlusPipeline"})
            EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << w << " missing from: " << e.what();
    }
    EXPECT_THROW(makeCache(), std::invalid_argument);
    // Edit (not Plus) takes one image: sample 4 has two.
    setPipelineClass(pipeline().path, "QwenImageEditPipeline");
    try {
        makeCache();
        FAIL() << "two reference images cached for QwenImageEditPipeline";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("2 edit_image paths"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("use a QwenImageEditPlusPipeline folder for several"), std::string::npos)
            << e.what();
    }
}

} // namespace
} // namespace parallax

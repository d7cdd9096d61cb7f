// The qwen_image kind against the independent PyTorch reference of tests/reference (written from
// diffusers' QwenImageTransformer2DModel's mathematics): a diffusers folder the reference wrote
// loads into the worker's model, and latents on an odd packed grid (3 x 5) with a padded prompt give
// the same rotary tables, velocity, flow-matching loss and gradients within fp32 tolerance. Skips
// with a message where python3-torch is missing.

#include "core/formats/SafetensorsFile.h"
#include "core/formats/SafetensorsWriter.h"
#include "core/spec/ModelDims.h"
#include "tests/support/Process.h"
#include "tests/trainer/support/QwenImageCompare.h"
#include "tests/trainer/support/ReferencePython.h"
#include "trainer/models/Model.h"
#include "trainer/models/PublishedNames.h"
#include "trainer/models/PublishedWeights.h"
#include "trainer/models/QwenImageRope.h"
#include "trainer/models/QwenImageUnits.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>

namespace parallax {
namespace {

using testing::ProcessResult;
using testing::runProcess;

constexpr const char* kPython = testing::kReferencePython;

using testing::qwenImageFolderDims;

// Two samples of latents 16 x 6 x 10 (3 x 5 packed tokens), prompts of 7 states, the second
// padded after 4, sigmas 0.3 and 0.8.
Batch oddGridBatch(const ModelDims& dims) {
    torch::manual_seed(5);
    Batch b;
    b.images = torch::randn({2, dims.channels, 6, 10});
    b.noise = torch::randn({2, dims.channels, 6, 10});
    b.timesteps = torch::tensor({0.3f, 0.8f});
    b.text_states = torch::randn({2, 7, dims.text_dim});
    b.attention_mask = torch::ones({2, 7}, torch::kBool);
    b.attention_mask.index_put_({1, torch::indexing::Slice(4, 7)}, false);
    b.sample_index = {0, 1};
    return b;
}

class QwenImageReference : public ::testing::Test {
protected:
    void SetUp() override {
        if (!testing::referenceAvailable())
            GTEST_SKIP() << kPython << " cannot import torch: apt-get install python3-torch";
    }
    void makeCheckpoint(const std::string& folder, const std::vector<std::string>& extra = {}) {
        std::vector<std::string> args = {kPython, testing::referenceScript("make_tiny_qwen_image.py"), folder};
        args.insert(args.end(), extra.begin(), extra.end());
        const ProcessResult made = runProcess(args);
        ASSERT_EQ(made.exitCode, 0) << made.output;
    }
    // The tiny pipeline folder (folder()) made by the reference, and the worker's model loaded from it.
    std::shared_ptr<Model> pipelineModel() {
        makeCheckpoint(folder(), {"--pipeline"});
        if (HasFatalFailure()) return nullptr;
        dims = qwenImageFolderDims(folder());
        const std::shared_ptr<Model> model = constructModel(dims);
        loadPublishedWeights(*model, folder());
        return model;
    }
    std::string folder() const { return dir.path() + "/pipeline"; }
    // The reference's outputs on `batch` with the gradients of qwenImageGradNames, in out.safetensors.
    void runReference(const std::string& folder, const Batch& batch) {
        testing::writeQwenImageBatch(batch, dir.path() + "/batch.safetensors");
        std::string list;
        for (const std::string& n : testing::qwenImageGradNames()) list += (list.empty() ? "" : ",") + n;
        const ProcessResult ref = runProcess({kPython, testing::referenceScript("run_qwen_image_reference.py"), folder,
                                              dir.path() + "/batch.safetensors", dir.path() + "/out.safetensors",
                                              "--grads", list});
        ASSERT_EQ(ref.exitCode, 0) << ref.output;
    }
    static void expectSameRotary(const QwenImageRotary& rot, const SafetensorsFile& out) {
        const torch::Tensor image = testing::readFloatTensor(out, "image_freqs");
        const torch::Tensor text = testing::readFloatTensor(out, "text_freqs");
    EXPECT_LT((rot.imageCos - image.select(-1, 0)).abs().max().item<double>(), 1e-6);
    EXPECT_LT((rot.imageSin - image.select(-1, 1)).abs().max().item<double>(), 1e-6);
    EXPECT_LT((rot.textCos - text.select(-1, 0)).abs().max().item<double>(), 1e-6);
    EXPECT_LT((rot.textSin - text.select(-1, 1)).abs().max().item<double>(), 1e-6);
    }
    testing::TempDir dir;
    ModelDims dims;
};

TEST_F(QwenImageReference, AnOddGridAndAPaddedPromptGiveTheReferencesNumbers) {
    const std::shared_ptr<Model> model = pipelineModel();
    ASSERT_TRUE(model);
    ASSERT_EQ(dims.kind, ModelKind::QwenImage);
    const Batch batch = oddGridBatch(dims);
    ASSERT_NO_FATAL_FAILURE(runReference(folder(), batch));
    const SafetensorsFile out(dir.path() + "/out.safetensors");

    // The rotary tables of the 3 x 5 grid and the 7 prompt states.
    expectSameRotary(qwenImageRotary(3, 5, 7, dims.mrope_section, dims.rope_theta, torch::kCPU), out);

    torch::Tensor temb;
    testing::qwenImagePrediction(*model, batch, &temb);
    EXPECT_LT(testing::relativeError(temb, testing::readFloatTensor(out, "temb")), 1e-5);
    testing::expectSameOutputAndLoss(*model, batch, out);
    testing::expectSameGradients(*model, out);
    // The last block's text stream feeds nothing: its output projection and MLP get no gradient.
    const std::map<std::string, torch::Tensor> mine = testing::publishedGradients(*model);
    for (const char* name : {"transformer_blocks.1.attn.to_add_out.weight", "transformer_blocks.1.txt_mlp.net.2.weight",
                             "transformer_blocks.1.attn.add_q_proj.weight"})
        EXPECT_FALSE(mine.at(name).defined()) << name;
}

// Prompts that pad nothing come without a mask (the datasets leave it out): joint attention takes
// none, and the numbers are the reference's with an all-ones mask.
TEST_F(QwenImageReference, PromptsWithoutPaddingTakeNoMaskAndGiveTheReferencesNumbers) {
    const std::shared_ptr<Model> model = pipelineModel();
    ASSERT_TRUE(model);
    Batch batch = oddGridBatch(dims);
    batch.attention_mask = torch::Tensor();
    ASSERT_NO_FATAL_FAILURE(runReference(folder(), batch));
    const SafetensorsFile out(dir.path() + "/out.safetensors");
    testing::expectSameOutputAndLoss(*model, batch, out);
    testing::expectSameGradients(*model, out);
}

// Qwen-Image-Edit's sequence: two reference images of other sizes (4 x 2 and 1 x 3 packed) after
// the image being made (3 x 5). The rotary tables over all three images, the velocity of the image
// being made, the loss over its tokens alone and the gradients are the reference's; the references
// change the prediction.
TEST_F(QwenImageReference, AnEditBatchWithTwoReferenceImagesGivesTheReferencesNumbers) {
    const std::shared_ptr<Model> model = pipelineModel();
    ASSERT_TRUE(model);
    Batch batch = oddGridBatch(dims);
    const torch::Tensor plain = testing::qwenImagePrediction(*model, batch);
    batch.reference_latents = {torch::randn({2, dims.channels, 8, 4}), torch::randn({2, dims.channels, 2, 6})};
    ASSERT_NO_FATAL_FAILURE(runReference(folder(), batch));
    const SafetensorsFile out(dir.path() + "/out.safetensors");

    const std::vector<PackedGrid> grids = latentGrids(batch);
    ASSERT_EQ(grids.size(), 3u);
    ASSERT_EQ(testing::readFloatTensor(out, "image_freqs").size(0), 15 + 8 + 3);
    expectSameRotary(qwenImageRotary(grids, 7, dims.mrope_section, dims.rope_theta, torch::kCPU), out);

    const torch::Tensor edited = testing::qwenImagePrediction(*model, batch);
    ASSERT_EQ(edited.sizes(), plain.sizes());
    EXPECT_GT((edited - plain).abs().max().item<double>(), 1e-3) << "the references changed nothing";
    testing::expectSameOutputAndLoss(*model, batch, out);
    testing::expectSameGradients(*model, out);
}

// Qwen-Image-Edit-2511's zero_cond_t: the reference images' tokens take the image stream's modulation
// of timestep 0, the image being made and the text the batch's. The Edit batch above gives the
// reference's numbers under it; the flag changes the prediction, and a batch without references
// predicts what it predicts without the flag.
TEST_F(QwenImageReference, ZeroCondTModulatesTheReferenceTokensAtTimestepZero) {
    const std::string folder = dir.path() + "/edit2511";
    makeCheckpoint(folder);
    const std::string configPath = folder + "/config.json";
    nlohmann::json config = nlohmann::json::parse(std::ifstream(configPath));
    config["zero_cond_t"] = true;
    std::ofstream(configPath) << config.dump(2);
    const ModelDims dims = qwenImageFolderDims(folder);
    ASSERT_TRUE(dims.zero_cond_t);
    ModelDims plainDims = dims;
    plainDims.zero_cond_t = false;
    const std::shared_ptr<Model> model = constructModel(dims), plain = constructModel(plainDims);
    loadPublishedWeights(*model, folder);
    loadPublishedWeights(*plain, folder);

    Batch batch = oddGridBatch(dims);
    EXPECT_TRUE(torch::equal(testing::qwenImagePrediction(*model, batch), testing::qwenImagePrediction(*plain, batch)))
        << "without references zero_cond_t changes nothing";
    batch.reference_latents = {torch::randn({2, dims.channels, 8, 4}), torch::randn({2, dims.channels, 2, 6})};
    EXPECT_GT((testing::qwenImagePrediction(*model, batch) - testing::qwenImagePrediction(*plain, batch))
                  .abs()
                  .max()
                  .item<double>(),
              1e-3);
    ASSERT_NO_FATAL_FAILURE(runReference(folder, batch));
    const SafetensorsFile out(dir.path() + "/out.safetensors");
    testing::expectSameOutputAndLoss(*model, batch, out);
    testing::expectSameGradients(*model, out);
}

// The same weights in a sharded transformer folder and a single file load to the same parameters;
// a shard cut short is named with its file before any parameter changes.
TEST_F(QwenImageReference, ShardsLoadLikeOneFileAndATruncatedShardIsNamed) {
    makeCheckpoint(dir.path() + "/one");
    makeCheckpoint(dir.path() + "/sharded", {"--max-shard-size", "60000"});
    ASSERT_TRUE(std::filesystem::exists(dir.path() + "/sharded/diffusion_pytorch_model.safetensors.index.json"));
    const std::shared_ptr<Model> a = constructModel(qwenImageFolderDims(dir.path() + "/one"));
    const std::shared_ptr<Model> b = constructModel(qwenImageFolderDims(dir.path() + "/sharded"));
    loadPublishedWeights(*a, dir.path() + "/one");
    loadPublishedWeights(*b, dir.path() + "/sharded");
    const auto pa = publishedParameters(*a), pb = publishedParameters(*b);
    ASSERT_EQ(pa.size(), pb.size());
    for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i].second, pb[i].second)) << pa[i].first;

    std::string shard;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path() + "/sharded"))
        if (entry.path().extension() == ".safetensors") shard = entry.path().string();
    ASSERT_FALSE(shard.empty());
    std::filesystem::resize_file(shard, std::filesystem::file_size(shard) / 2);
    const std::shared_ptr<Model> model = buildModel(qwenImageFolderDims(dir.path() + "/sharded"), 3);
    const torch::Tensor before = publishedParameters(*model).front().second.clone();
    try {
        loadPublishedWeights(*model, dir.path() + "/sharded");
        FAIL() << "a truncated shard loaded";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find(std::filesystem::path(shard).filename().string()), std::string::npos) << e.what();
    }
    EXPECT_TRUE(torch::equal(before, publishedParameters(*model).front().second));
}

} // namespace
} // namespace parallax

// data.kind = "latents": shards of latents and prompt states as the cache writes them, read into
// flow-matching batches for qwen_image; broken shards and samples named before training.

#include "core/formats/SafetensorsWriter.h"
#include "core/spec/ModelDims.h"
#include "core/spec/QwenImageModels.h"
#include "tests/trainer/data/TempDir.h"
#include "trainer/data/DataError.h"
#include "trainer/data/DatasetUtils.h"
#include "trainer/data/Dataset.h"
#include "trainer/data/LatentCacheDataset.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>

namespace parallax {
namespace {

ModelDims tinyDims() {
    ModelSpec spec;
    spec.kind = ModelKind::QwenImage;
    spec.preset = "tiny";
    return resolveModel(spec);
}

// Samples "a", "b", ... of latents (16, h, w) and prompts of `tokens[i]` states, values i + 1 and
// -(i + 1) so that each sample's place in a batch can be told.
void writeShard(const std::string& path, int h, int w, const std::vector<int64_t>& tokens, int64_t textDim,
                char first = 'a') {
    std::vector<torch::Tensor> keep;
    std::vector<TensorData> tensors;
    for (size_t i = 0; i < tokens.size(); ++i) {
        const std::string name(1, static_cast<char>(first + i));
        keep.push_back(torch::full({16, h, w}, float(i + 1)));
        tensors.push_back({name + ".latents", Dtype::F32, {16, h, w}, keep.back().data_ptr()});
        keep.push_back(torch::full({tokens[i], textDim}, -float(i + 1)).to(torch::kBFloat16));
        tensors.push_back({name + ".prompt_embeds", Dtype::BF16, {tokens[i], textDim}, keep.back().data_ptr()});
    }
    writeSafetensors(path, tensors);
}

TEST(LatentCacheDataset, ReadsShardsInOrderAndPadsPromptsWithAMask) {
    test::TempDir dir;
    const ModelDims dims = tinyDims();
    writeShard(dir.path() + "/cache-00001.safetensors", 6, 10, {3, 20}, dims.text_dim, 'c');
    writeShard(dir.path() + "/cache-00000.safetensors", 6, 10, {5, 2}, dims.text_dim);
    const LatentCacheDataset data(dir.path(), dims, 7);
    ASSERT_EQ(data.size(), 4);
    // Samples 0, 1 from the first file by name; 2, 3 from the second.
    const Batch b = data.makeBatch({1, 3, 0}, 0);
    EXPECT_EQ(b.images.sizes(), (std::vector<int64_t>{3, 16, 6, 10}));
    EXPECT_EQ(b.images[0][0][0][0].item<float>(), 2.0f);
    EXPECT_EQ(b.images[1][0][0][0].item<float>(), 2.0f); // "d": second sample of its shard
    // Prompts of 2, 20 (kept to seq_len = 16) and 5 states: padded to 16 with the mask.
    EXPECT_EQ(b.text_states.sizes(), (std::vector<int64_t>{3, dims.seq_len, dims.text_dim}));
    const torch::Tensor counts = b.attention_mask.sum(1).to(torch::kInt64);
    EXPECT_EQ(counts[0].item<int64_t>(), 2);
    EXPECT_EQ(counts[1].item<int64_t>(), dims.seq_len);
    EXPECT_EQ(counts[2].item<int64_t>(), 5);
    EXPECT_TRUE(b.attention_mask[2].narrow(0, 0, 5).all().item<bool>());
    EXPECT_FALSE(b.attention_mask[2].narrow(0, 5, dims.seq_len - 5).any().item<bool>());
    EXPECT_EQ(b.text_states[0][1][0].item<float>(), -2.0f);
    EXPECT_EQ(b.text_states[0][2][0].item<float>(), 0.0f); // padding
    EXPECT_EQ(b.text_states[1][15][3].item<float>(), -2.0f);
    // Prompts that fill the micro-batch's width pad nothing: no mask, attention takes none.
    const Batch full = data.makeBatch({3}, 0);
    EXPECT_EQ(full.text_states.size(1), dims.seq_len);
    EXPECT_FALSE(full.attention_mask.defined());
    EXPECT_EQ(filledPositions(dims, full), latentSequence(dims, full).image + dims.seq_len);
    const Batch alone = data.makeBatch({1}, 0); // a prompt of 2 states alone: its own width
    EXPECT_EQ(alone.text_states.size(1), 2);
    EXPECT_FALSE(alone.attention_mask.defined());
    // Noise of the latents' shape and sigmas in (0, 1).
    EXPECT_EQ(b.noise.sizes(), b.images.sizes());
    EXPECT_GT(b.timesteps.min().item<float>(), 0.0f);
    EXPECT_LT(b.timesteps.max().item<float>(), 1.0f);
}

// Noise and sigma depend on (seed, step, sample) alone: the same sample in another micro-batch,
// in another place, gets the same; another step, others.
TEST(LatentCacheDataset, NoiseAndSigmaFollowTheSampleNotTheBatch) {
    test::TempDir dir;
    const ModelDims dims = tinyDims();
    writeShard(dir.path() + "/a.safetensors", 4, 4, {3, 3, 3}, dims.text_dim);
    const LatentCacheDataset data(dir.path(), dims, 7);
    const Batch one = data.makeBatch({2}, 5), three = data.makeBatch({0, 1, 2}, 5), later = data.makeBatch({2}, 6);
    EXPECT_TRUE(torch::equal(one.noise[0], three.noise[2]));
    EXPECT_EQ(one.timesteps[0].item<float>(), three.timesteps[2].item<float>());
    EXPECT_FALSE(torch::equal(one.noise[0], later.noise[0]));
}

// The shift of Qwen-Image's scheduler: mu 0.5 at 256 tokens, 0.9 at 8192, e^mu / (e^mu + 1/u - 1).
TEST(LatentCacheDataset, SigmaIsShiftedByTheImagesTokenCount) {
    EXPECT_NEAR(qwenImageShiftMu(256), 0.5, 1e-12);
    EXPECT_NEAR(qwenImageShiftMu(8192), 0.9, 1e-12);
    EXPECT_NEAR(qwenImageShiftMu(4096), 0.5 + 0.4 * 3840.0 / 7936.0, 1e-12);
}

DataError openError(const std::string& folder) {
    try {
        LatentCacheDataset data(folder, tinyDims(), 7);
    } catch (const DataError& e) {
        return e;
    }
    ADD_FAILURE() << folder << " opened";
    return DataError("");
}

TEST(LatentCacheDataset, BrokenShardsAndSamplesAreNamed) {
    const ModelDims dims = tinyDims();
    {
        test::TempDir dir;
        writeShard(dir.path() + "/a.safetensors", 4, 4, {3}, dims.text_dim);
        std::filesystem::resize_file(dir.path() + "/a.safetensors", 100);
        const std::string message = openError(dir.path()).what();
        EXPECT_NE(message.find("a.safetensors"), std::string::npos) << message;
    }
    {
        test::TempDir dir;
        writeShard(dir.path() + "/a.safetensors", 5, 4, {3}, dims.text_dim);
        const std::string message = openError(dir.path()).what();
        EXPECT_NE(message.find("sample \"a\""), std::string::npos) << message;
        EXPECT_NE(message.find("even"), std::string::npos) << message;
    }
    {
        test::TempDir dir;
        writeShard(dir.path() + "/a.safetensors", 4, 4, {3}, dims.text_dim + 1);
        const std::string message = openError(dir.path()).what();
        EXPECT_NE(message.find("model.text_dim = " + std::to_string(dims.text_dim)), std::string::npos) << message;
    }
    {
        test::TempDir dir;
        const torch::Tensor latents = torch::zeros({16, 4, 4});
        writeSafetensors(dir.path() + "/a.safetensors", {{"x.latents", Dtype::F32, {16, 4, 4}, latents.data_ptr()}});
        const std::string message = openError(dir.path()).what();
        EXPECT_NE(message.find("no .prompt_embeds"), std::string::npos) << message;
    }
    {
        test::TempDir dir;
        const std::string message = openError(dir.path()).what();
        EXPECT_NE(message.find("holds no samples"), std::string::npos) << message;
    }
}

// Latents of two sizes in one micro-batch: an error naming both samples, not a silent resize.
TEST(LatentCacheDataset, TwoLatentSizesInOneMicroBatchAreRefused) {
    test::TempDir dir;
    const ModelDims dims = tinyDims();
    writeShard(dir.path() + "/a.safetensors", 4, 4, {3}, dims.text_dim);
    writeShard(dir.path() + "/b.safetensors", 4, 6, {3}, dims.text_dim, 'b');
    const LatentCacheDataset data(dir.path(), dims, 7);
    try {
        data.makeBatch({0, 1}, 0);
        FAIL() << "a batch of two latent sizes was made";
    } catch (const DataError& e) {
        EXPECT_NE(std::string(e.what()).find("sample 1"), std::string::npos) << e.what();
    }
    EXPECT_NO_THROW(data.makeBatch({1}, 0));
}

// makeDataset gives this dataset for data.kind = "latents".
TEST(LatentCacheDataset, IsTheDatasetOfTheLatentsKind) {
    test::TempDir dir;
    const ModelDims dims = tinyDims();
    writeShard(dir.path() + "/a.safetensors", 4, 4, {3, 4}, dims.text_dim);
    DataSpec spec;
    spec.kind = DataKind::Latents;
    spec.path = dir.path();
    const std::unique_ptr<Dataset> data = makeDataset(spec, dims, 7);
    EXPECT_EQ(data->size(), 2);
    EXPECT_NE(data->describe().find("2 samples in 1 shards"), std::string::npos) << data->describe();
}

} // namespace
} // namespace parallax

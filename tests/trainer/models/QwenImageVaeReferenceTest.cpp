// Qwen-Image's VAE in the worker against the independent PyTorch reference of tests/reference
// (written from diffusers' AutoencoderKLQwenImage): a tiny diffusers folder the reference wrote loads
// under diffusers' names, images of an odd latent grid (40 x 56 -> 5 x 7) encode to the reference's
// posterior and normalized latents, latents decode to its images, within fp32 tolerance; a BF16
// checkpoint, a sharded one and an encoder-only VAE give the same numbers.

#include "tests/trainer/models/QwenImageVaeTestSupport.h"
#include "trainer/models/PublishedWeights.h"
#include "trainer/models/QwenImageVaeWeights.h"

#include <filesystem>

namespace parallax {
namespace {

using testing::QwenImageVaeTest;
using testing::readFloatTensor;
using testing::relativeError;
using testing::seededNormal;

// Two images 40 x 56 in [-1, 1]: a latent grid of 5 x 7, odd both ways.
torch::Tensor oddImages() { return torch::tanh(seededNormal({2, 3, 40, 56}, 11)); }

std::map<std::string, torch::Tensor> parametersOf(const torch::nn::Module& m) {
    std::map<std::string, torch::Tensor> out;
    for (const auto& p : m.named_parameters()) out[p.key()] = p.value();
    return out;
}

TEST_F(QwenImageVaeTest, ATinyPipelineFolderLoadsEveryTensorUnderDiffusersNames) {
    const std::string folder = makeVae("pipeline", {"--pipeline"});
    const auto vae = loadQwenImageVae(folder);
    EXPECT_EQ(vae->config().path, folder + "/vae/config.json");
    EXPECT_EQ(vae->config().base_dim, 8);
    EXPECT_EQ(vae->config().num_res_blocks, 1);
    const auto mine = parametersOf(*vae);
    const SafetensorsFile file(folder + "/vae/diffusion_pytorch_model.safetensors");
    EXPECT_EQ(mine.size(), file.tensors().size());
    for (const TensorInfo& t : file.tensors()) {
        const auto it = mine.find(t.name);
        ASSERT_NE(it, mine.end()) << t.name;
        EXPECT_TRUE(torch::equal(it->second, tensorOf(file.view(t)))) << t.name;
        EXPECT_FALSE(it->second.requires_grad()) << t.name;
    }
    for (const char* name : {"encoder.down_blocks.3.time_conv.weight", "decoder.up_blocks.0.upsamplers.0.resample.1.bias",
                             "encoder.mid_block.attentions.0.norm.gamma", "decoder.up_blocks.1.resnets.0.conv_shortcut.weight"})
        EXPECT_EQ(mine.count(name), 1u) << name;
}

TEST_F(QwenImageVaeTest, OddImagesEncodeToTheReferencesPosteriorAndLatents) {
    const std::string folder = makeVae("vae");
    const auto vae = loadQwenImageVae(folder);
    const torch::Tensor images = oddImages(), noise = seededNormal({2, 16, 5, 7}, 12);
    const SafetensorsFile want(runReference(folder, {{"images", images}, {"noise", noise}}, false));

    const QwenImageVae::Posterior p = vae->posterior(images);
    ASSERT_EQ(p.mean.sizes(), (std::vector<int64_t>{2, 16, 5, 7}));
    EXPECT_LT(relativeError(p.mean, readFloatTensor(want, "mean")), 1e-5);
    EXPECT_LT(relativeError(p.logvar, readFloatTensor(want, "logvar")), 1e-5);
    const torch::Tensor latents = vae->encode(images);
    EXPECT_LT(relativeError(latents, readFloatTensor(want, "latents")), 1e-5);
    EXPECT_LT(relativeError(vae->sampleLatents(p, noise), readFloatTensor(want, "sample_latents")), 1e-5);
    // The normalization is not the identity on the tiny config: a wrong one would show.
    EXPECT_GT((latents - p.mean).abs().max().item<double>(), 0.1);
    EXPECT_FALSE(latents.requires_grad());
}

TEST_F(QwenImageVaeTest, LatentsDecodeToTheReferencesImages) {
    const std::string folder = makeVae("vae");
    const auto vae = loadQwenImageVae(folder);
    const torch::Tensor latents = seededNormal({2, 16, 5, 7}, 13);
    const SafetensorsFile want(runReference(folder, {{"latents", latents}}, true));

    const torch::Tensor images = vae->decode(latents);
    ASSERT_EQ(images.sizes(), (std::vector<int64_t>{2, 3, 40, 56}));
    EXPECT_LT(relativeError(images, readFloatTensor(want, "images")), 1e-5);
    EXPECT_LE(images.abs().max().item<double>(), 1.0);
    EXPECT_GT(images.std().item<double>(), 0.1); // not all clamped or constant
}

// The published VAE ships in BF16: it loads into fp32 (each value converted exactly) and gives the
// reference's numbers on the same file; a bf16 VAE of it stays close to them.
TEST_F(QwenImageVaeTest, ABf16CheckpointLoadsIntoFp32AndBf16) {
    const std::string folder = makeVae("bf16", {"--dtype", "BF16"});
    const auto vae = loadQwenImageVae(folder);
    EXPECT_EQ(vae->dtype(), torch::kFloat32);
    const SafetensorsFile file(folder + "/diffusion_pytorch_model.safetensors");
    EXPECT_EQ(file.tensors().front().dtype, Dtype::BF16);
    const torch::Tensor images = oddImages();
    const SafetensorsFile want(runReference(folder, {{"images", images}}, false));
    const torch::Tensor expected = readFloatTensor(want, "latents");
    EXPECT_LT(relativeError(vae->encode(images), expected), 1e-5);

    QwenImageVaeOptions half;
    half.dtype = torch::kBFloat16;
    const auto low = loadQwenImageVae(folder, half);
    EXPECT_EQ(low->dtype(), torch::kBFloat16);
    const torch::Tensor latents = low->encode(images);
    EXPECT_EQ(latents.scalar_type(), torch::kBFloat16);
    EXPECT_LT(relativeError(latents.to(torch::kFloat32), expected), 0.05);
    const torch::Tensor images16 = low->decode(latents);
    EXPECT_EQ(images16.scalar_type(), torch::kBFloat16);
    EXPECT_LT(relativeError(images16.to(torch::kFloat32), vae->decode(latents)), 0.1); // 0.04 measured
}

TEST_F(QwenImageVaeTest, ShardsLoadLikeOneFileAndOnePartLoadsAlone) {
    const std::string one = makeVae("one");
    const std::string sharded = makeVae("sharded", {"--max-shard-size", "20000"});
    ASSERT_TRUE(std::filesystem::exists(sharded + "/diffusion_pytorch_model.safetensors.index.json"));
    const auto a = parametersOf(*loadQwenImageVae(one)), b = parametersOf(*loadQwenImageVae(sharded));
    ASSERT_EQ(a.size(), b.size());
    for (const auto& [name, t] : a) EXPECT_TRUE(torch::equal(t, b.at(name))) << name;

    QwenImageVaeOptions encoderOnly;
    encoderOnly.decoder = false;
    const auto encoder = loadQwenImageVae(sharded, encoderOnly);
    for (const auto& [name, t] : parametersOf(*encoder)) EXPECT_EQ(name.rfind("decoder.", 0), std::string::npos) << name;
    EXPECT_LT(parametersOf(*encoder).size(), a.size());
    const torch::Tensor images = oddImages();
    EXPECT_TRUE(torch::allclose(encoder->encode(images), loadQwenImageVae(one)->encode(images), 1e-6, 1e-6));
    EXPECT_THROW(encoder->decode(torch::zeros({1, 16, 2, 2})), std::logic_error);
}

} // namespace
} // namespace parallax

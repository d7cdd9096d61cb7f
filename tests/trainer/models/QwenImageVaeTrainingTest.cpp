// The objective Qwen-Image's VAE trains with (trainer/models/QwenImageVaeTraining.h) against the
// independent PyTorch reference (tests/reference/qwen_image_vae.py, training_loss): loss, its two
// parts and the gradients of parameters across the encoder, the latent convolutions, the mid
// block's attention and the decoder, on an odd latent grid; and Adam on Fashion-MNIST's clothes
// (Debian's dataset-fashion-mnist) learning to reconstruct them.

#include "core/spec/QwenImageVaeModels.h"
#include "tests/trainer/models/QwenImageVaeTestSupport.h"
#include "tests/trainer/support/FashionMnistFiles.h"
#include "trainer/data/FashionMnistDataset.h"
#include "trainer/models/QwenImageVaeTraining.h"
#include "trainer/models/QwenImageVaeWeights.h"
#include "trainer/models/Model.h"

#include <filesystem>

namespace parallax {
namespace {

using namespace testing; // the VAE tests' fixture and helpers (QwenImageVaeTestSupport.h)

void trainEveryParameter(QwenImageVae& vae) {
    for (auto& p : vae.parameters()) p.requires_grad_(true);
}

TEST_F(QwenImageVaeTest, TheTrainingLossAndItsGradientsAreTheReferences) {
    const std::string folder = makeVae("vae");
    const auto vae = loadQwenImageVae(folder);
    trainEveryParameter(*vae);
    const torch::Tensor images = torch::tanh(seededNormal({2, 3, 40, 56}, 31)); // latents 5 x 7
    const torch::Tensor noise = seededNormal({2, 16, 5, 7}, 32);
    const std::vector<std::string> names = {"encoder.conv_in.weight", "encoder.down_blocks.0.conv1.bias",
                                            "quant_conv.weight", "post_quant_conv.bias",
                                            "decoder.mid_block.attentions.0.to_qkv.weight",
                                            "decoder.up_blocks.0.resnets.0.norm1.gamma", "decoder.conv_out.weight"};
    std::string joined;
    for (const std::string& n : names) joined += (joined.empty() ? "" : ",") + n;
    const double klWeight = 0.25; // large enough that the KL part moves the encoder's gradients
    const SafetensorsFile want(runReference(folder, {{"images", images}, {"noise", noise}},
                                            std::vector<std::string>{"--train", "0.25", "--grads", joined}));

    const VaeTrainingLoss got = vaeTrainingLoss(*vae, images, noise, klWeight);
    EXPECT_NEAR(got.reconstruction.item<double>(), readFloatTensor(want, "reconstruction").item<double>(),
                1e-5 * readFloatTensor(want, "reconstruction").item<double>());
    EXPECT_NEAR(got.kl.item<double>(), readFloatTensor(want, "kl").item<double>(),
                1e-5 * readFloatTensor(want, "kl").item<double>());
    EXPECT_GT(got.kl.item<double>(), 0.0);
    EXPECT_NEAR(got.loss.item<double>(), got.reconstruction.item<double>() + klWeight * got.kl.item<double>(), 1e-6);
    got.loss.backward();
    const auto params = vae->named_parameters();
    for (const std::string& n : names) {
        const torch::Tensor g = params[n].grad();
        ASSERT_TRUE(g.defined()) << n;
        EXPECT_GT(g.abs().max().item<double>(), 0.0) << n;
        EXPECT_LT(relativeError(g, readFloatTensor(want, "grad." + n)), 1e-4) << n;
    }
}

TEST_F(QwenImageVaeTest, TheTrainingLossNamesWhatIsWrong) {
    const auto vae = loadQwenImageVae(makeVae("vae"));
    const torch::Tensor images = torch::zeros({1, 3, 16, 16});
    try {
        vaeTrainingLoss(*vae, images, torch::zeros({1, 16, 3, 2}), 0.1);
        FAIL() << "noise of another shape was taken";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("noise [1, 16, 3, 2] must be shaped as the posterior's mean [1, 16, 2, 2]"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW(vaeTrainingLoss(*vae, torch::zeros({1, 3, 12, 16}), torch::zeros({1, 16, 2, 2}), 0.1),
                 std::invalid_argument); // 12 is no multiple of 8
    QwenImageVaeOptions encoderAlone;
    encoderAlone.decoder = false;
    const auto encoderOnly = loadQwenImageVae(makeVae("encoder"), encoderAlone);
    EXPECT_THROW(vaeTrainingLoss(*encoderOnly, images, torch::zeros({1, 16, 2, 2}), 0.1), std::logic_error);
}

// The tiny configuration of make_tiny_qwen_image_vae.py, statistics left to initQwenImageVae.
QwenImageVaeConfig tinyConfig() {
    QwenImageVaeConfig config;
    config.base_dim = 8;
    config.num_res_blocks = 1;
    return config;
}

bool sameParameters(QwenImageVae& a, QwenImageVae& b) {
    const auto pb = b.named_parameters();
    for (const auto& p : a.named_parameters())
        if (!pb.contains(p.key()) || !torch::equal(p.value(), pb[p.key()])) return false;
    return a.named_parameters().size() == pb.size();
}

// A VAE to train from scratch: the seed decides its weights; its activations are of order one; the
// folder it saves loads back here to the same tensors and statistics, in F32 and in BF16, and the
// reference (which reads diffusers' layout as AutoencoderKLQwenImage does) encodes as it does.
TEST_F(QwenImageVaeTest, AFreshVaeIsSeededAndItsFolderLoadsBackHereAndInTheReference) {
    const auto vae = initQwenImageVae(tinyConfig(), 5);
    EXPECT_TRUE(sameParameters(*vae, *initQwenImageVae(tinyConfig(), 5)));
    EXPECT_FALSE(sameParameters(*vae, *initQwenImageVae(tinyConfig(), 6)));
    EXPECT_EQ(vae->config().latents_mean, std::vector<double>(16, 0.0));
    EXPECT_EQ(vae->config().latents_std, std::vector<double>(16, 1.0));
    const torch::Tensor images = torch::tanh(seededNormal({2, 3, 40, 56}, 41));
    {
        torch::NoGradGuard noGrad;
        const double spread = vae->trackedDecode(seededNormal({2, 16, 5, 7}, 42)).std().item<double>();
        EXPECT_GT(spread, 0.05);
        EXPECT_LT(spread, 20.0);
    }
    const std::string folder = dir.path() + "/fresh";
    saveQwenImageVae(*vae, folder);
    const auto loaded = loadQwenImageVae(folder);
    EXPECT_TRUE(sameParameters(*vae, *loaded));
    EXPECT_EQ(loaded->config().latents_std, vae->config().latents_std);
    const SafetensorsFile want(runReference(folder, {{"images", images}}, false));
    EXPECT_LT(relativeError(vae->posterior(images).mean, readFloatTensor(want, "mean")), 1e-5);

    saveQwenImageVae(*vae, dir.path() + "/bf16", /*bf16=*/true);
    const SafetensorsFile bf16(dir.path() + "/bf16/diffusion_pytorch_model.safetensors");
    for (const TensorInfo& t : bf16.tensors()) EXPECT_EQ(t.dtype, Dtype::BF16) << t.name;
    const auto narrowed = loadQwenImageVae(dir.path() + "/bf16");
    const auto mine = vae->named_parameters();
    for (const auto& p : narrowed->named_parameters())
        EXPECT_TRUE(torch::equal(p.value(), mine[p.key()].to(torch::kBFloat16).to(torch::kFloat32))) << p.key();
    QwenImageVaeOptions halfOnly;
    halfOnly.decoder = false;
    EXPECT_THROW(saveQwenImageVae(*initQwenImageVae(tinyConfig(), 5, halfOnly), dir.path() + "/half"), std::logic_error);
}

// Statistics measured over a VAE's own latents make those latents standard per channel, and travel
// in its config.json.
TEST_F(QwenImageVaeTest, MeasuredStatisticsStandardizeTheLatents) {
    const auto vae = initQwenImageVae(tinyConfig(), 7);
    const std::vector<torch::Tensor> batches = {torch::tanh(seededNormal({3, 3, 32, 48}, 51)),
                                                torch::tanh(2 * seededNormal({2, 3, 32, 48}, 52))};
    measureLatentStatistics(*vae, batches);
    const torch::Tensor latents = torch::cat({vae->encode(batches[0]), vae->encode(batches[1])}); // (5, 16, 4, 6)
    const torch::Tensor perChannel = latents.transpose(0, 1).reshape({16, -1}).to(torch::kFloat64);
    EXPECT_LT(perChannel.mean(1).abs().max().item<double>(), 1e-4);
    EXPECT_LT((perChannel.std(1, /*unbiased=*/false) - 1).abs().max().item<double>(), 1e-3);
    saveQwenImageVae(*vae, dir.path() + "/measured");
    const QwenImageVaeConfig read = readQwenImageVaeConfig(dir.path() + "/measured");
    ASSERT_EQ(read.latents_mean.size(), 16u);
    for (size_t c = 0; c < 16; ++c) {
        EXPECT_DOUBLE_EQ(read.latents_mean[c], vae->config().latents_mean[c]) << c;
        EXPECT_DOUBLE_EQ(read.latents_std[c], vae->config().latents_std[c]) << c;
    }
    EXPECT_THROW(vae->setLatentStatistics({0.0, 1.0}, {1.0, 1.0}), std::invalid_argument);
    EXPECT_THROW(vae->setLatentStatistics(std::vector<double>(16, 0.0), std::vector<double>(16, 0.0)),
                 std::invalid_argument);
    EXPECT_THROW(measureLatentStatistics(*vae, {}), std::invalid_argument);
}

// The parameters the estimates count (qwenImageVaeTensors) are those the worker's VAE declares, by
// name and shape, for the tiny and the published configuration (built without values).
TEST(QwenImageVaeCounts, TheCountedTensorsAreTheModulesParameters) {
    for (const QwenImageVaeConfig& config : {tinyConfig(), QwenImageVaeConfig{}}) {
        const auto vae = std::make_shared<QwenImageVae>(config, true, true); // named_modules needs a shared_ptr
        std::map<std::string, std::vector<int64_t>> declared;
        for (const auto& item : vae->named_modules())
            if (const auto* leaf = dynamic_cast<const VaeLeaf*>(item.value().get()))
                for (const VaeLeaf::Declared& d : leaf->declared()) declared[item.key() + "." + d.name] = d.shape;
        const std::vector<ModelTensor> counted = qwenImageVaeTensors(config);
        EXPECT_EQ(counted.size(), declared.size()) << "base_dim " << config.base_dim;
        for (const ModelTensor& t : counted) {
            const auto it = declared.find(t.name);
            ASSERT_NE(it, declared.end()) << t.name;
            EXPECT_EQ(it->second, t.shape) << t.name;
        }
    }
}

// model.kind = "qwen_image_vae": its model is the VAE under "units.0.vae.", drawn as
// initQwenImageVae draws it from the same seed, and its unit's loss is vaeTrainingLoss's times the
// pixel values it averaged over, with kVaeKlWeight.
TEST(QwenImageVaeKind, TheModelIsTheVaeDrawnAsInitQwenImageVaeDrawsIt) {
    ModelSpec spec;
    spec.kind = ModelKind::QwenImageVae;
    const ModelDims dims = resolveModel(spec);
    const auto model = buildModel(dims, 9);
    const auto fresh = initQwenImageVae(qwenImageVaeConfigOf(dims), 9);
    const auto mine = model->named_parameters();
    const auto want = fresh->named_parameters();
    EXPECT_EQ(mine.size(), want.size());
    for (const auto& p : want) {
        const std::string name = "units.0.vae." + p.key();
        ASSERT_TRUE(mine.contains(name)) << name;
        EXPECT_TRUE(torch::equal(mine[name], p.value())) << name;
        EXPECT_TRUE(mine[name].requires_grad()) << name;
    }
    Batch batch;
    batch.images = torch::tanh(seededNormal({2, 3, 32, 32}, 61));
    batch.noise = seededNormal({2, 16, 4, 4}, 62);
    batch.sample_index = {0, 1};
    const Activation out = model->forwardAll(batch);
    const VaeTrainingLoss l = vaeTrainingLoss(*fresh, batch.images, batch.noise, kVaeKlWeight);
    EXPECT_DOUBLE_EQ(out[1].item<double>(), 2.0 * 3 * 32 * 32);
    EXPECT_NEAR(out[0].item<double>() / out[1].item<double>(), l.loss.item<double>(), 1e-6);
}

// Adam on the tiny VAE, Fashion-MNIST padded to 32 x 32 (grey repeated over RGB, in [-1, 1]),
// batches of 16: the reconstruction error falls to under a third of its start.
TEST_F(QwenImageVaeTest, AdamLearnsToReconstructClothes) {
    ASSERT_TRUE(fashionMnistInstalled()) << kFashionMnistMissing;
    ModelSpec spec;
    spec.kind = ModelKind::QwenImageVae;
    const FashionMnistDataset clothes("", "train", resolveModel(spec), 1);
    const auto vae = loadQwenImageVae(makeVae("vae"));
    trainEveryParameter(*vae);
    torch::optim::Adam adam(vae->parameters(), torch::optim::AdamOptions(2e-3));
    torch::manual_seed(3);
    const auto batchOf = [&](int64_t first) {
        std::vector<torch::Tensor> images;
        for (int64_t i = first; i < first + 16; ++i) images.push_back(clothes.rawImage(i) / 127.5 - 1.0);
        const torch::Tensor grey = torch::constant_pad_nd(torch::stack(images), {2, 2, 2, 2}, -1.0); // (16, 1, 32, 32)
        return grey.expand({16, 3, 32, 32}).contiguous();
    };
    double first = 0, last = 0;
    for (int64_t step = 0; step < 120; ++step) {
        const VaeTrainingLoss l = vaeTrainingLoss(*vae, batchOf(16 * step), torch::randn({16, 16, 4, 4}), 1e-3);
        adam.zero_grad();
        l.loss.backward();
        adam.step();
        if (step < 5) first += l.reconstruction.item<double>() / 5;
        if (step >= 115) last += l.reconstruction.item<double>() / 5;
    }
    EXPECT_LT(last, first / 3) << "reconstruction error " << first << " at the start, " << last << " at the end";
}

} // namespace
} // namespace parallax

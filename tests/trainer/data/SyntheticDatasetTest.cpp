#include "core/spec/ModelDims.h"
#include "trainer/data/DataError.h"
#include "trainer/data/DatasetUtils.h"
#include "trainer/data/SyntheticDataset.h"

#include <gtest/gtest.h>

#include <numeric>
#include <set>

namespace parallax {
namespace {

ModelDims dimsOf(const std::string& kind, const std::string& preset = "") {
    ModelSpec spec;
    spec.kind = Choice<ModelKind>::named(kind);
    if (!preset.empty()) spec.preset = preset;
    return resolveModel(spec);
}

TEST(SyntheticDataset, GptSequencesFollowAPerSampleAffineRecurrence) {
    const ModelDims dims = dimsOf("gpt");
    SyntheticDataset data(dims, 3);
    const Batch batch = data.makeBatch({0, 1, 2, 3}, 0);
    ASSERT_EQ(batch.tokens.sizes(), torch::IntArrayRef({4, dims.seq_len + 1}));
    EXPECT_EQ(batch.tokens.scalar_type(), torch::kInt64);
    EXPECT_GE(batch.tokens.min().item<int64_t>(), 0);
    EXPECT_LT(batch.tokens.max().item<int64_t>(), dims.vocab);
    std::set<std::pair<int64_t, int64_t>> rules;
    for (int64_t i = 0; i < 4; ++i) {
        const auto x = batch.tokens[i];
        // Recover (a, b) from the first three tokens, then check the rest of the sequence.
        bool found = false;
        for (int64_t a : {1, 3, 5, 7})
            for (int64_t b = 1; b <= 16; ++b) {
                bool ok = true;
                for (int64_t j = 0; j < dims.seq_len && ok; ++j)
                    ok = (a * x[j].item<int64_t>() + b) % dims.vocab == x[j + 1].item<int64_t>();
                if (ok && !found) {
                    found = true;
                    rules.insert({a, b});
                }
            }
        EXPECT_TRUE(found) << "sample " << i;
    }
    EXPECT_GT(rules.size(), 1u); // samples differ in their rule
}

TEST(SyntheticDataset, ASampleIsTheSameWhateverBatchItIsIn) {
    for (const char* kind : {"gpt", "qwen_image", "qwen_image_vae"}) {
        const ModelDims dims = dimsOf(kind, "tiny");
        SyntheticDataset data(dims, 5);
        const Batch a = data.makeBatch({10, 11, 12}, 4);
        const Batch b = data.makeBatch({99, 12}, 4);
        if (dims.kind == ModelKind::Gpt) EXPECT_TRUE(torch::equal(a.tokens[2], b.tokens[1])) << kind;
        if (dims.kind != ModelKind::Gpt) {
            EXPECT_TRUE(torch::equal(a.images[2], b.images[1])) << kind;
            EXPECT_TRUE(torch::equal(a.noise[2], b.noise[1])) << kind;
        }
        if (dims.kind == ModelKind::QwenImage) { // the prompt's states, however far each batch pads
            const auto valid = [](const Batch& batch, int64_t i) {
                const int64_t n = batch.attention_mask.defined() ? batch.attention_mask[i].sum().item<int64_t>()
                                                                 : batch.text_states.size(1);
                return batch.text_states[i].narrow(0, 0, n);
            };
            EXPECT_TRUE(torch::equal(valid(a, 2), valid(b, 1))) << kind;
        }
    }
}

TEST(SyntheticDataset, QwenImageFlowNoiseDependsOnSeedStepAndSampleOnly) {
    const ModelDims dims = dimsOf("qwen_image", "tiny");
    SyntheticDataset data(dims, 5);
    const Batch a = data.makeBatch({10, 11, 12, 13}, 7);
    const Batch b = data.makeBatch({13, 40, 11}, 7); // another rank's split of the same step
    ASSERT_EQ(a.noise.sizes(), a.images.sizes());
    ASSERT_EQ(a.timesteps.sizes(), torch::IntArrayRef({4}));
    EXPECT_TRUE(torch::equal(a.noise[3], b.noise[0]));
    EXPECT_TRUE(torch::equal(a.noise[1], b.noise[2]));
    EXPECT_EQ(a.timesteps[3].item<float>(), b.timesteps[0].item<float>());
    EXPECT_EQ(a.timesteps[1].item<float>(), b.timesteps[2].item<float>());
    EXPECT_GT(a.timesteps.min().item<float>(), 0.0f);
    EXPECT_LT(a.timesteps.max().item<float>(), 1.0f);
    // Another step or seed draws anew.
    const Batch c = data.makeBatch({10}, 8);
    EXPECT_FALSE(torch::equal(a.noise[0], c.noise[0]));
    EXPECT_NE(a.timesteps[0].item<float>(), c.timesteps[0].item<float>());
    const Batch d = SyntheticDataset(dims, 6).makeBatch({10}, 7);
    EXPECT_FALSE(torch::equal(a.noise[0], d.noise[0]));
    // Standard normal noise over many samples.
    std::vector<int64_t> many(64);
    std::iota(many.begin(), many.end(), 0);
    const Batch big = data.makeBatch(many, 1);
    EXPECT_NEAR(big.noise.mean().item<double>(), 0.0, 0.02);
    EXPECT_NEAR(big.noise.std().item<double>(), 1.0, 0.02);
    // The sigmas are shifted by the image's token count, towards noise.
    EXPECT_GT(big.timesteps.mean().item<double>(), 0.45);
    EXPECT_FALSE(big.labels.defined());
}

// qwen_image's synthetic samples: standardized latents of the ten shapes, and prompt states of
// between half and all of model.seq_len states, the class's own plus a little of the sample's, padded
// with zeros under a mask.
TEST(SyntheticDataset, QwenImageLatentsAreStandardizedAndPromptsCarryTheirClass) {
    const ModelDims dims = dimsOf("qwen_image", "tiny");
    SyntheticDataset data(dims, 2);
    std::vector<int64_t> indices(40);
    std::iota(indices.begin(), indices.end(), 100);
    const Batch batch = data.makeBatch(indices, 0);
    ASSERT_EQ(batch.images.sizes(), torch::IntArrayRef({40, dims.channels, dims.image_size, dims.image_size}));
    EXPECT_FALSE(batch.tokens.defined());
    EXPECT_FALSE(batch.labels.defined());
    EXPECT_NEAR(batch.images.mean().item<double>(), 0.0, 1e-3);
    EXPECT_NEAR(batch.images.std().item<double>(), 1.0, 0.05);
    ASSERT_TRUE(batch.attention_mask.defined()) << "40 prompts of one length";
    ASSERT_EQ(batch.text_states.size(0), 40);
    ASSERT_EQ(batch.text_states.size(2), dims.text_dim);
    std::set<int64_t> lengths;
    for (int64_t i = 0; i < 40; ++i) {
        const torch::Tensor mask = batch.attention_mask[i];
        const int64_t n = mask.sum().item<int64_t>();
        lengths.insert(n);
        EXPECT_GE(n, std::max<int64_t>(1, dims.seq_len / 2));
        EXPECT_LE(n, dims.seq_len);
        EXPECT_TRUE(mask.narrow(0, 0, n).all().item<bool>()) << "the mask is the prompt's prefix";
        const int64_t rest = batch.text_states.size(1) - n;
        if (rest > 0) EXPECT_EQ(batch.text_states[i].narrow(0, n, rest).abs().max().item<double>(), 0.0);
    }
    EXPECT_GT(lengths.size(), 1u);
    // A prompt's first state is nearest its own class's (the caption is learnable from the image).
    for (int64_t i = 0; i < 40; ++i) {
        const int64_t label = data.label(indices[static_cast<size_t>(i)]);
        double own = 1e30, other = 1e30;
        for (int64_t j = 0; j < 40; ++j) {
            if (j == i) continue;
            const double d = (batch.text_states[i][0] - batch.text_states[j][0]).pow(2).sum().item<double>();
            double& slot = data.label(indices[static_cast<size_t>(j)]) == label ? own : other;
            slot = std::min(slot, d);
        }
        if (own < 1e30) EXPECT_LT(own, other) << "sample " << i;
    }
}

// qwen_image_vae's synthetic samples: the ten shapes as images in [-1, 1], with the noise of each
// image's posterior draw (the latents' shape), drawn from (seed, step, sample) alone.
TEST(SyntheticDataset, VaeImagesComeInMinusOneToOneAndShowTheirShape) {
    const ModelDims dims = dimsOf("qwen_image_vae", "tiny");
    SyntheticDataset data(dims, 2);
    std::vector<int64_t> indices(40);
    std::iota(indices.begin(), indices.end(), 100);
    const Batch batch = data.makeBatch(indices, 0);
    ASSERT_EQ(batch.images.sizes(), torch::IntArrayRef({40, dims.channels, dims.image_size, dims.image_size}));
    EXPECT_FALSE(batch.tokens.defined());
    EXPECT_FALSE(batch.labels.defined());
    EXPECT_FALSE(batch.timesteps.defined());
    EXPECT_GE(batch.images.min().item<double>(), -1.0);
    EXPECT_LE(batch.images.max().item<double>(), 1.0);
    EXPECT_GT(batch.images.max().item<double>(), 0.5) << "the shapes are bright on a dark ground";
    const int64_t latent = dims.image_size / dims.patch;
    ASSERT_EQ(batch.noise.sizes(), torch::IntArrayRef({40, dims.z_dim, latent, latent}));
    EXPECT_FALSE(torch::equal(batch.noise[0], data.makeBatch({100}, 1).noise[0])) << "each step draws anew";
    EXPECT_TRUE(torch::equal(batch.noise[3], data.makeBatch({103}, 0).noise[0]));
    std::set<int64_t> classes;
    for (int64_t i = 0; i < 40; ++i) classes.insert(data.label(indices[static_cast<size_t>(i)]));
    EXPECT_EQ(classes.size(), 10u);
    // An image is closer to the other images of its class than to those of another class.
    auto classMean = [&](int64_t cls, int64_t except) {
        std::vector<torch::Tensor> of;
        for (int64_t i = 0; i < 40; ++i)
            if (i != except && data.label(indices[static_cast<size_t>(i)]) == cls) of.push_back(batch.images[i]);
        return of.empty() ? torch::Tensor() : torch::stack(of).mean(0);
    };
    int64_t compared = 0;
    for (int64_t i = 0; i < 40; ++i) {
        const int64_t label = data.label(indices[static_cast<size_t>(i)]);
        const torch::Tensor same = classMean(label, i);
        if (!same.defined()) continue;
        const double own = (batch.images[i] - same).pow(2).mean().item<double>();
        for (int64_t other = 0; other < SyntheticDataset::kClasses; ++other) {
            const torch::Tensor m = classMean(other, i);
            if (other == label || !m.defined()) continue;
            EXPECT_LT(own, (batch.images[i] - m).pow(2).mean().item<double>()) << "sample " << i << " class " << other;
            ++compared;
        }
    }
    EXPECT_GT(compared, 100);
}

TEST(SyntheticDataset, FactoryMakesEachKindAndNamesWhatIsWrong) {
    EXPECT_EQ(makeDataset(DataSpec{}, dimsOf("gpt"), 1)->size(), SyntheticDataset::kSamples);
    EXPECT_NE(makeDataset(DataSpec{}, dimsOf("qwen_image_vae"), 1)->describe().find("shapes"), std::string::npos);
    DataSpec unknown;
    unknown.kind = Choice<DataKind>::named("webdataset");
    try {
        makeDataset(unknown, dimsOf("gpt"), 1);
        FAIL();
    } catch (const DataError& e) {
        EXPECT_NE(std::string(e.what()).find("data.kind = \"webdataset\" is unknown"), std::string::npos);
    }
    DataSpec images;
    images.kind = DataKind::FashionMnist;
    try {
        makeDataset(images, dimsOf("gpt"), 1);
        FAIL();
    } catch (const DataError& e) {
        EXPECT_NE(std::string(e.what()).find("use model.kind = \"qwen_image_vae\""), std::string::npos) << e.what();
    }
    EXPECT_THROW(SyntheticDataset(dimsOf("gpt"), 1).makeBatch({SyntheticDataset::kSamples}, 0), DataError);
}

} // namespace
} // namespace parallax

// Qwen-Image's sampler against the independent PyTorch reference of tests/reference
// (run_qwen_image_sampler.py, written from diffusers' QwenImagePipeline and FlowMatchEulerDiscreteScheduler)
// on a tiny pipeline folder (transformer/ with text width 64, vae/): the schedule, the initial noise
// of a seed, the guided steps from the same noise, the decoded image and the PNG it becomes. Skips
// with a message where python3-torch is missing.

#include "core/formats/SafetensorsFile.h"
#include "core/formats/SafetensorsWriter.h"
#include "core/image/ImageDecoder.h"
#include "core/spec/ModelDims.h"
#include "tests/support/Process.h"
#include "tests/trainer/support/QwenImageCompare.h"
#include "tests/trainer/support/ReferencePython.h"
#include "trainer/models/Model.h"
#include "trainer/models/PublishedWeights.h"
#include "trainer/models/QwenImageVaeWeights.h"
#include "trainer/sampling/QwenImageSampler.h"
#include "trainer/sampling/QwenImageSchedule.h"
#include "trainer/sampling/SampleImage.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <memory>

namespace parallax {
namespace {

using testing::ProcessResult;
using testing::readFloatTensor;
using testing::relativeError;
using testing::runProcess;

constexpr const char* kPython = testing::kReferencePython;
constexpr int64_t kWidth = 48, kHeight = 32; // latents 4 x 6, a 2 x 3 packed grid

torch::Tensor fromFloats(const std::vector<float>& v) { return torch::tensor(v, torch::kFloat32); }

class QwenImageSamplerTest : public ::testing::Test {
protected:
    // One pipeline folder for the suite: the reference writes it once.
    static void SetUpTestSuite() {
        if (!testing::referenceAvailable()) return;
        s_dir = std::make_unique<testing::TempDir>();
        const std::string folder = s_dir->path() + "/pipeline";
        for (const std::vector<std::string>& args :
             {std::vector<std::string>{"make_tiny_qwen_image.py", folder, "--pipeline", "--joint-dim", "64"},
              {"make_tiny_qwen_image_vae.py", folder, "--pipeline"}}) {
            std::vector<std::string> argv = {kPython, testing::referenceScript(args[0])};
            argv.insert(argv.end(), args.begin() + 1, args.end());
            const ProcessResult made = runProcess(argv);
            if (made.exitCode != 0) s_problem = args[0] + " failed: " + made.output;
        }
    }
    static void TearDownTestSuite() { s_dir.reset(); }

    void SetUp() override {
        if (!testing::referenceAvailable())
            GTEST_SKIP() << kPython << " cannot import torch: apt-get install python3-torch";
        ASSERT_TRUE(s_problem.empty()) << s_problem;
        m_folder = s_dir->path() + "/pipeline";
        m_model = constructModel(testing::qwenImageFolderDims(m_folder));
        loadPublishedWeights(*m_model, m_folder);
        QwenImageVaeOptions options;
        options.encoder = false;
        m_vae = loadQwenImageVae(m_folder, options);
        torch::manual_seed(11);
        m_prompt = torch::randn({5, 64});
        m_negative = torch::randn({3, 64});
    }

    // The reference's outputs for the prompts and `noise` (or, undefined, the noise of --seed 7).
    SafetensorsFile reference(const torch::Tensor& noise, int64_t steps, double guidance, const std::string& name) {
        const std::string in = s_dir->path() + "/" + name + ".in.safetensors", out = s_dir->path() + "/" + name + ".safetensors";
        std::vector<TensorData> tensors = {{"prompt_embeds", Dtype::F32, m_prompt.sizes().vec(), m_prompt.data_ptr()},
                                            {"negative_embeds", Dtype::F32, m_negative.sizes().vec(), m_negative.data_ptr()}};
        std::vector<std::string> args = {kPython, testing::referenceScript("run_qwen_image_sampler.py"), "sample", m_folder,
                                         in, out, "--steps", std::to_string(steps), "--guidance", std::to_string(guidance)};
        const torch::Tensor contiguous = noise.defined() ? noise.contiguous() : noise;
        if (noise.defined())
            tensors.push_back({"noise", Dtype::F32, contiguous.sizes().vec(), contiguous.data_ptr()});
        else
            args.insert(args.end(), {"--seed", "7", "--height", std::to_string(kHeight), "--width", std::to_string(kWidth)});
        writeSafetensors(in, tensors);
        const ProcessResult ran = runProcess(args);
        EXPECT_EQ(ran.exitCode, 0) << ran.output;
        return SafetensorsFile(out);
    }

    static inline std::unique_ptr<testing::TempDir> s_dir;
    static inline std::string s_problem;
    std::string m_folder;
    std::shared_ptr<Model> m_model;
    std::shared_ptr<QwenImageVae> m_vae;
    torch::Tensor m_prompt, m_negative;
};

// The schedule alone needs no model.
class QwenImageScheduleTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (!testing::referenceAvailable())
            GTEST_SKIP() << kPython << " cannot import torch: apt-get install python3-torch";
    }
    testing::TempDir m_dir;
};

TEST_F(QwenImageScheduleTest, TheScheduleIsTheReferencesForTwoSizes) {
    // 6 tokens (48 x 32 pixels) and 4096 (1024 x 1024), where mu differs.
    for (const auto& [steps, tokens] : {std::pair<int64_t, int64_t>{4, 6}, {30, 4096}}) {
        const std::string out = m_dir.path() + "/schedule" + std::to_string(tokens) + ".safetensors";
        const ProcessResult ran = runProcess({kPython, testing::referenceScript("run_qwen_image_sampler.py"), "schedule",
                                              std::to_string(steps), std::to_string(tokens), out});
        ASSERT_EQ(ran.exitCode, 0) << ran.output;
        const SafetensorsFile file(out);
        const QwenImageSchedule mine = qwenImageSchedule(steps, tokens);
        ASSERT_EQ(static_cast<int64_t>(mine.sigmas.size()), steps + 1);
        EXPECT_LT((fromFloats(mine.sigmas) - readFloatTensor(file, "sigmas")).abs().max().item<double>(), 1e-7) << tokens;
        EXPECT_LT((fromFloats(mine.timesteps) - readFloatTensor(file, "timesteps")).abs().max().item<double>(), 1e-4)
            << tokens;
        EXPECT_FLOAT_EQ(mine.sigmas.front(), 1.0f);
        EXPECT_NEAR(mine.sigmas[static_cast<size_t>(steps - 1)], 0.02f, 1e-7);
        EXPECT_EQ(mine.sigmas.back(), 0.0f);
    }
    EXPECT_THROW(qwenImageSchedule(1, 6), std::invalid_argument);
}

TEST_F(QwenImageSamplerTest, GuidedStepsAndTheDecodedImageAreTheReferences) {
    QwenImageSampler sampler(*m_model, *m_vae);
    // The seed's noise is the pipeline generator's: torch.Generator().manual_seed(7) on the CPU.
    const torch::Tensor noise = sampler.initialNoise(kWidth, kHeight, 7);
    const SafetensorsFile seeded = reference(torch::Tensor(), 4, 4.0, "seeded");
    EXPECT_TRUE(torch::equal(noise, readFloatTensor(seeded, "noise")));

    const torch::Tensor latents = sampler.denoise(noise, m_prompt, m_negative, 4, 4.0);
    EXPECT_LT(relativeError(latents, readFloatTensor(seeded, "latents")), 1e-4);
    // Guidance changes the result: without it the latents are another reference's.
    const torch::Tensor plain = sampler.denoise(noise, m_prompt, torch::Tensor(), 4, 4.0);
    const SafetensorsFile unguided = reference(noise, 4, 1.0, "unguided");
    EXPECT_LT(relativeError(plain, readFloatTensor(unguided, "latents")), 1e-4);
    EXPECT_GT(relativeError(plain, latents), 1e-2);

    const torch::Tensor image = m_vae->decode(latents);
    EXPECT_LT(relativeError(image, readFloatTensor(seeded, "images")), 1e-4);
    const Image rgb = sampleToRgb(image);
    const torch::Tensor pixels = torch::from_blob(const_cast<uint8_t*>(rgb.samples.data()), {1, kHeight, kWidth, 3},
                                                  torch::kUInt8).to(torch::kFloat32);
    // The same but for values that a last-bit difference rounds the other way.
    EXPECT_LE((pixels - readFloatTensor(seeded, "pixels")).abs().max().item<double>(), 1.0);
}

TEST_F(QwenImageSamplerTest, ASeedGivesOneImageThePngDecodesToItsSizeAndBadArgumentsAreNamed) {
    m_model->train();
    QwenImageSampler sampler(*m_model, *m_vae);
    const QwenImageSampler::Sample a = sampler.sample(m_prompt, m_negative, kWidth, kHeight, 3, 4.0, 21);
    const QwenImageSampler::Sample b = sampler.sample(m_prompt, m_negative, kWidth, kHeight, 3, 4.0, 21);
    const QwenImageSampler::Sample c = sampler.sample(m_prompt, m_negative, kWidth, kHeight, 3, 4.0, 22);
    EXPECT_TRUE(m_model->is_training()) << "the sampler left the model in eval mode";
    EXPECT_FALSE(a.image.requires_grad());
    ASSERT_EQ(a.image.sizes(), (std::vector<int64_t>{1, 3, kHeight, kWidth}));
    EXPECT_TRUE(torch::equal(a.image, b.image));
    EXPECT_FALSE(torch::equal(a.noise, c.noise));
    EXPECT_GT((a.image - c.image).abs().max().item<double>(), 1e-3);

    const std::string png = s_dir->path() + "/sample.png";
    writeSamplePng(a.image, png);
    const DecodedImage decoded = decodeImageFile(png);
    EXPECT_EQ(decoded.rgb.width, kWidth);
    EXPECT_EQ(decoded.rgb.height, kHeight);
    EXPECT_EQ(decoded.rgb.samples, sampleToRgb(a.image).samples);
    EXPECT_FALSE(std::filesystem::exists(png + ".partial"));

    // What the sampler refuses, named.
    auto message = [&](const std::function<void()>& call) {
        try {
            call();
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_NE(message([&] { sampler.sample(m_prompt, {}, 40, 32, 2, 1.0, 1); }).find("multiples of 16"), std::string::npos);
    EXPECT_NE(message([&] { sampler.sample(torch::randn({5, 32}), {}, 48, 32, 2, 1.0, 1); }).find("prompt states"),
              std::string::npos);
    EXPECT_NE(message([&] { sampler.sample(m_prompt, torch::randn({2, 3, 64}), 48, 32, 2, 4.0, 1); })
                  .find("negative prompt states"),
              std::string::npos);
    EXPECT_NE(message([&] { sampler.sample(m_prompt, {}, 48, 32, 1, 1.0, 1); }).find("at least 2"), std::string::npos);
}

} // namespace
} // namespace parallax

// Qwen-Image's VAE on a GPU: loaded straight onto CUDA, it encodes 40 x 56 images and decodes latents
// to the numbers of the PyTorch reference (tests/reference, run on the CPU) within fp32 tolerance,
// with TF32 convolutions off as the reference computes; in bf16 it stays close to them. Skips where
// there is no GPU or no python3 with PyTorch on PATH (a GPU host's pip PyTorch runs the reference).

#include "tests/trainer/models/QwenImageVaeTestSupport.h"
#include "trainer/models/QwenImageVaeWeights.h"

#include <ATen/Context.h>

namespace parallax {
namespace {

using testing::readFloatTensor;
using testing::relativeError;
using testing::seededNormal;

class QwenImageVaeGpu : public testing::QwenImageVaeTest {
protected:
    void SetUp() override {
        if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
        python = "python3";
        QwenImageVaeTest::SetUp();
        // cuDNN's convolutions run in TF32 by default on this hardware; the reference runs in fp32.
        m_tf32 = at::globalContext().allowTF32CuDNN();
        at::globalContext().setAllowTF32CuDNN(false);
    }
    void TearDown() override {
        if (torch::cuda::is_available()) at::globalContext().setAllowTF32CuDNN(m_tf32);
    }

    static QwenImageVaeOptions onCuda(torch::ScalarType dtype) {
        QwenImageVaeOptions options;
        options.device = torch::Device(torch::kCUDA, 0);
        options.dtype = dtype;
        return options;
    }

private:
    bool m_tf32 = true;
};

TEST_F(QwenImageVaeGpu, EncodesAndDecodesOnCudaAsTheReference) {
    const std::string folder = makeVae("vae", {"--pipeline"});
    const torch::Tensor images = torch::tanh(seededNormal({2, 3, 40, 56}, 11));
    const torch::Tensor latents = seededNormal({2, 16, 5, 7}, 13);
    const SafetensorsFile encoded(runReference(folder, {{"images", images}}, false));
    const SafetensorsFile decoded(runReference(folder, {{"latents", latents}}, true));
    const torch::Tensor wantLatents = readFloatTensor(encoded, "latents"), wantImages = readFloatTensor(decoded, "images");

    const auto vae = loadQwenImageVae(folder, onCuda(torch::kFloat32));
    EXPECT_TRUE(vae->device().is_cuda());
    const torch::Tensor gotLatents = vae->encode(images);
    ASSERT_TRUE(gotLatents.is_cuda());
    EXPECT_LT(relativeError(gotLatents.cpu(), wantLatents), 1e-5);
    EXPECT_LT(relativeError(vae->decode(latents).cpu(), wantImages), 1e-5);

    const auto low = loadQwenImageVae(folder, onCuda(torch::kBFloat16));
    const torch::Tensor lowLatents = low->encode(images);
    EXPECT_EQ(lowLatents.scalar_type(), torch::kBFloat16);
    EXPECT_LT(relativeError(lowLatents.cpu().to(torch::kFloat32), wantLatents), 0.05);
    EXPECT_LT(relativeError(low->decode(latents).cpu().to(torch::kFloat32), wantImages), 0.1);
}

} // namespace
} // namespace parallax

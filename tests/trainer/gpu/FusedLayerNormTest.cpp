// The fused CUDA LayerNorm (float32 in, bf16 out) against LibTorch's under bf16 autocast followed by
// the cast the next product makes: output, input gradient and parameter gradients, for widths that
// fill the threads evenly and widths that do not, one row and many; and the same with a residual add
// fused in front (addLayerNorm), gradients arriving on both outputs. Skips where there is no GPU or
// the build has no kernels; on the CPU the composed path must be taken.

#include <gtest/gtest.h>

#include "tests/trainer/gpu/FusedOpTestSupport.h"

#include "trainer/compat/TorchCompat.h"
#include "trainer/ops/LayerNorm.h"

#include <tuple>

namespace {

using namespace parallax;

struct Result {
    torch::Tensor y, dx, dw, db;
};

Result run(const torch::Tensor& start, const torch::Tensor& upstream, const torch::Tensor& weight,
           const torch::Tensor& bias, bool fused) {
    torch::nn::LayerNorm ln(torch::nn::LayerNormOptions({start.size(-1)}));
    ln->to(start.device());
    {
        torch::NoGradGuard noGrad;
        ln->weight.copy_(weight);
        ln->bias.copy_(bias);
    }
    torch::Tensor x = start.clone().requires_grad_(true);
    torch::Tensor y;
    {
        compat::AutocastScope autocast(c10::DeviceType::CUDA, at::kBFloat16, true);
        if (fused) {
            EXPECT_TRUE(fusedLayerNormApplies(*ln, x));
        }
        y = fused ? layerNorm(*ln, x) : ln->forward(x).to(torch::kBFloat16);
    }
    EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
    y.backward(upstream);
    return {y.detach(), x.grad(), ln->weight.grad(), ln->bias.grad()};
}

using test::relativeError;

class FusedLayerNorm : public ::testing::TestWithParam<std::tuple<int64_t, int64_t>> {};

TEST_P(FusedLayerNorm, MatchesAutocastLayerNormOnTheGpu) {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    const auto [rows, columns] = GetParam();
    const auto cuda = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kFloat32);
    torch::manual_seed(5);
    const torch::Tensor start = torch::randn({rows, columns}, cuda) * 2 + 0.5;
    const torch::Tensor upstream = torch::randn({rows, columns}, cuda).to(torch::kBFloat16);
    const torch::Tensor weight = 1 + 0.1 * torch::randn({columns}, cuda);
    const torch::Tensor bias = 0.1 * torch::randn({columns}, cuda);
    {
        torch::nn::LayerNorm probe(torch::nn::LayerNormOptions({columns}));
        probe->to(torch::kCUDA);
        compat::AutocastScope autocast(c10::DeviceType::CUDA, at::kBFloat16, true);
        if (!fusedLayerNormApplies(*probe, start)) GTEST_SKIP() << "this build has no fused CUDA kernels";
    }
    const Result fused = run(start, upstream, weight, bias, true);
    const Result composed = run(start, upstream, weight, bias, false);
    // Outputs: the same float32 value rounded to bf16, to one bf16 step (2^-8 relative) either way.
    const torch::Tensor yDiff = (fused.y.to(torch::kFloat32) - composed.y.to(torch::kFloat32)).abs();
    const torch::Tensor yTol = composed.y.to(torch::kFloat32).abs() * (1.0 / 128) + 1e-6;
    EXPECT_TRUE(yDiff.le(yTol).all().item<bool>()) << "largest output difference " << yDiff.max().item<double>();
    EXPECT_LT(relativeError(fused.dx, composed.dx), 1e-4);
    EXPECT_LT(relativeError(fused.dw, composed.dw), 1e-4);
    EXPECT_LT(relativeError(fused.db, composed.db), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Shapes, FusedLayerNorm,
                         ::testing::Values(std::make_tuple(int64_t{1}, int64_t{768}),
                                           std::make_tuple(int64_t{4096}, int64_t{768}),
                                           std::make_tuple(int64_t{37}, int64_t{1000}),
                                           std::make_tuple(int64_t{2500}, int64_t{2048}),
                                           std::make_tuple(int64_t{64}, int64_t{5120})),
                         [](const auto& info) {
                             return std::to_string(std::get<0>(info.param)) + "x" +
                                    std::to_string(std::get<1>(info.param));
                         });

// addLayerNorm: the residual sum and its LayerNorm in one pass, against x + branch followed by
// autocast's LayerNorm and the cast; backward with a gradient arriving on both outputs.
struct AddResult {
    torch::Tensor sum, y, dx, dbranch, dw, db;
};

AddResult runAdd(const torch::Tensor& start, const torch::Tensor& branch0, const torch::Tensor& upstreamSum,
                 const torch::Tensor& upstreamY, bool fused) {
    torch::nn::LayerNorm ln(torch::nn::LayerNormOptions({start.size(-1)}));
    ln->to(start.device());
    {
        torch::NoGradGuard noGrad;
        ln->weight.normal_(1.0, 0.1);
        ln->bias.normal_(0.0, 0.1);
    }
    torch::Tensor x = start.clone().requires_grad_(true);
    torch::Tensor branch = branch0.clone().requires_grad_(true);
    torch::Tensor sum, y;
    {
        compat::AutocastScope autocast(c10::DeviceType::CUDA, at::kBFloat16, true);
        if (fused) {
            std::tie(sum, y) = addLayerNorm(*ln, x, branch);
        } else {
            sum = x + branch;
            y = ln->forward(sum).to(torch::kBFloat16);
        }
    }
    EXPECT_EQ(sum.scalar_type(), torch::kFloat32);
    EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
    torch::autograd::backward({sum, y}, {upstreamSum, upstreamY});
    return {sum.detach(), y.detach(), x.grad(), branch.grad(), ln->weight.grad(), ln->bias.grad()};
}

TEST_P(FusedLayerNorm, ResidualAddMatchesTheComposedSumAndLayerNorm) {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    const auto [rows, columns] = GetParam();
    const auto cuda = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kFloat32);
    {
        torch::nn::LayerNorm probe(torch::nn::LayerNormOptions({columns}));
        probe->to(torch::kCUDA);
        compat::AutocastScope autocast(c10::DeviceType::CUDA, at::kBFloat16, true);
        if (!fusedLayerNormApplies(*probe, torch::zeros({rows, columns}, cuda)))
            GTEST_SKIP() << "this build has no fused CUDA kernels";
    }
    torch::manual_seed(7);
    const torch::Tensor start = torch::randn({rows, columns}, cuda) * 2 + 0.5;
    const torch::Tensor branch = torch::randn({rows, columns}, cuda).to(torch::kBFloat16);
    const torch::Tensor upstreamSum = torch::randn({rows, columns}, cuda);
    const torch::Tensor upstreamY = torch::randn({rows, columns}, cuda).to(torch::kBFloat16);
    torch::manual_seed(8);
    const AddResult fused = runAdd(start, branch, upstreamSum, upstreamY, true);
    torch::manual_seed(8); // the same LayerNorm parameters
    const AddResult composed = runAdd(start, branch, upstreamSum, upstreamY, false);
    EXPECT_TRUE(torch::equal(fused.sum, composed.sum)) << "the residual sum is one float32 add either way";
    const torch::Tensor yDiff = (fused.y.to(torch::kFloat32) - composed.y.to(torch::kFloat32)).abs();
    const torch::Tensor yTol = composed.y.to(torch::kFloat32).abs() * (1.0 / 128) + 1e-6;
    EXPECT_TRUE(yDiff.le(yTol).all().item<bool>()) << "largest output difference " << yDiff.max().item<double>();
    EXPECT_LT(relativeError(fused.dx, composed.dx), 1e-4);
    ASSERT_EQ(fused.dbranch.scalar_type(), torch::kBFloat16);
    EXPECT_LT(relativeError(fused.dbranch.to(torch::kFloat32), composed.dbranch.to(torch::kFloat32)), 1e-2);
    EXPECT_LT(relativeError(fused.dw, composed.dw), 1e-4);
    EXPECT_LT(relativeError(fused.db, composed.db), 1e-4);
}

TEST(FusedLayerNormCpu, TheResidualAddComposesOnTheCpu) {
    torch::manual_seed(9);
    torch::nn::LayerNorm ln(torch::nn::LayerNormOptions({8}));
    const torch::Tensor x0 = torch::randn({3, 8}), b0 = torch::randn({3, 8});
    torch::Tensor x = x0.clone().requires_grad_(true), branch = b0.clone().requires_grad_(true);
    const auto [sum, y] = addLayerNorm(*ln, x, branch);
    EXPECT_TRUE(torch::equal(sum, x0 + b0));
    EXPECT_TRUE(torch::allclose(y, ln->forward(x0 + b0)));
    (sum.sum() + (y * y).sum()).backward();
    torch::Tensor ref = (x0 + b0).requires_grad_(true);
    (ref.sum() + ln->forward(ref).pow(2).sum()).backward();
    EXPECT_TRUE(torch::allclose(x.grad(), ref.grad(), 1e-5, 1e-6));
    EXPECT_TRUE(torch::allclose(branch.grad(), ref.grad(), 1e-5, 1e-6));
}

TEST(FusedLayerNormCpu, TheComposedPathRunsOnTheCpu) {
    torch::nn::LayerNorm ln(torch::nn::LayerNormOptions({8}));
    const torch::Tensor x = torch::randn({3, 8});
    EXPECT_FALSE(fusedLayerNormApplies(*ln, x));
    EXPECT_TRUE(torch::equal(layerNorm(*ln, x), ln->forward(x)));
}

// modulate (adaLN): LayerNorm without affine parameters, then * (1 + scale) + shift per sample,
// against the composed operations under autocast and the cast the next product makes; scale and
// shift are bf16 slices of one product's output, as the models' modulation Linears give them.
struct ModulateResult {
    torch::Tensor y, dx, dscale, dshift;
};

ModulateResult runModulate(const torch::Tensor& start, const torch::Tensor& mod0, const torch::Tensor& upstream,
                           bool fused) {
    torch::Tensor x = start.clone().requires_grad_(true);
    torch::Tensor mod = mod0.clone().requires_grad_(true); // (B, 1, 2C) bf16
    torch::Tensor y;
    {
        compat::AutocastScope autocast(c10::DeviceType::CUDA, at::kBFloat16, true);
        const std::vector<torch::Tensor> parts = mod.chunk(2, -1);
        if (fused) {
            EXPECT_TRUE(fusedModulateApplies(x, parts[1], parts[0]));
            y = modulate(x, parts[1], parts[0], 1e-6);
        } else {
            y = (torch::layer_norm(x, {x.size(-1)}, {}, {}, 1e-6) * (1 + parts[1]) + parts[0]).to(torch::kBFloat16);
        }
    }
    EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
    y.backward(upstream);
    const std::vector<torch::Tensor> g = mod.grad().chunk(2, -1);
    return {y.detach(), x.grad(), g[1], g[0]};
}

class FusedModulate : public ::testing::TestWithParam<test::AdaLnShape> {};

// `stream`: x's type, the residual stream's (float32, or qwen_image's bf16); x's gradient
// comes back in it, to float32 rounding of the same sums or to bf16 rounding.
void expectTheComposedModulation(const test::AdaLnShape& shape, torch::ScalarType stream) {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    const auto [batch, tokens, columns] = shape;
    const auto cuda = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kFloat32);
    torch::manual_seed(11);
    const torch::Tensor start = (torch::randn({batch, tokens, columns}, cuda) * 2 + 0.5).to(stream);
    const torch::Tensor mod = (0.2 * torch::randn({batch, 1, 2 * columns}, cuda)).to(torch::kBFloat16);
    const torch::Tensor upstream = torch::randn({batch, tokens, columns}, cuda).to(torch::kBFloat16);
    {
        compat::AutocastScope autocast(c10::DeviceType::CUDA, at::kBFloat16, true);
        const auto parts = mod.chunk(2, -1);
        if (!fusedModulateApplies(start, parts[1], parts[0])) GTEST_SKIP() << "this build has no fused CUDA kernels";
    }
    const ModulateResult fused = runModulate(start, mod, upstream, true);
    const ModulateResult composed = runModulate(start, mod, upstream, false);
    const torch::Tensor yDiff = (fused.y.to(torch::kFloat32) - composed.y.to(torch::kFloat32)).abs();
    const torch::Tensor yTol = composed.y.to(torch::kFloat32).abs() * (1.0 / 128) + 1e-6;
    EXPECT_TRUE(yDiff.le(yTol).all().item<bool>()) << "largest output difference " << yDiff.max().item<double>();
    ASSERT_EQ(fused.dx.scalar_type(), stream);
    EXPECT_LT(relativeError(fused.dx, composed.dx), stream == torch::kFloat32 ? 1e-4 : 1e-2);
    // The scale and shift gradients are per-sample sums over the tokens, rounded to bf16 (mod's type).
    ASSERT_EQ(fused.dscale.scalar_type(), torch::kBFloat16);
    EXPECT_LT(relativeError(fused.dscale.to(torch::kFloat32), composed.dscale.to(torch::kFloat32)), 1e-2);
    EXPECT_LT(relativeError(fused.dshift.to(torch::kFloat32), composed.dshift.to(torch::kFloat32)), 1e-2);
    // Each sample's shift gradient is the sum of its own rows' upstream gradient.
    const torch::Tensor rowSums = upstream.to(torch::kFloat32).sum(1, /*keepdim=*/true);
    EXPECT_LT(relativeError(fused.dshift.to(torch::kFloat32), rowSums), 1e-2);
}

TEST_P(FusedModulate, MatchesTheComposedLayerNormScaleAndShift) {
    expectTheComposedModulation(GetParam(), torch::kFloat32);
}

TEST_P(FusedModulate, MatchesTheComposedFormOnABf16Stream) {
    expectTheComposedModulation(GetParam(), torch::kBFloat16);
}

INSTANTIATE_TEST_SUITE_P(Shapes, FusedModulate, test::adaLnShapes(), test::adaLnShapeName);

// qwen_image's modulation normalizes with eps 1e-6, a LayerNorm's default is 1e-5: the kernel
// takes the one given. Rows of variance near 1e-6 tell the two apart.
TEST(FusedModulateEps, NormalizesWithTheEpsilonGiven) {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    const auto cuda = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kFloat32);
    torch::manual_seed(13);
    const torch::Tensor x = torch::randn({2, 64, 3072}, cuda) * 1e-3;
    const torch::Tensor scale = (0.2 * torch::randn({2, 1, 3072}, cuda)).to(torch::kBFloat16);
    const torch::Tensor shift = (0.2 * torch::randn({2, 1, 3072}, cuda)).to(torch::kBFloat16);
    compat::AutocastScope autocast(c10::DeviceType::CUDA, at::kBFloat16, true);
    if (!fusedModulateApplies(x, scale, shift)) GTEST_SKIP() << "this build has no fused CUDA kernels";
    for (const double eps : {1e-6, 1e-5}) {
        const torch::Tensor fused = modulate(x, scale, shift, eps).to(torch::kFloat32);
        const torch::Tensor composed = torch::layer_norm(x, {3072}, {}, {}, eps) * (1 + scale.to(torch::kFloat32)) +
                                       shift.to(torch::kFloat32);
        EXPECT_LT(relativeError(fused, composed), 1e-2) << eps;
    }
    const torch::Tensor a = modulate(x, scale, shift, 1e-6).to(torch::kFloat32);
    const torch::Tensor b = modulate(x, scale, shift, 1e-5).to(torch::kFloat32);
    EXPECT_GT(relativeError(a, b), 0.1) << "the epsilon made no difference";
}

TEST(FusedModulateCpu, TheComposedPathRunsOnTheCpu) {
    torch::manual_seed(12);
    const torch::Tensor x = torch::randn({2, 5, 8}), scale = torch::randn({2, 1, 8}), shift = torch::randn({2, 1, 8});
    EXPECT_FALSE(fusedModulateApplies(x, scale, shift));
    EXPECT_TRUE(
        torch::equal(modulate(x, scale, shift, 1e-6), torch::layer_norm(x, {8}, {}, {}, 1e-6) * (1 + scale) + shift));
}

} // namespace

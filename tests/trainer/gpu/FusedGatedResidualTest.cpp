// The fused gated residual (x + gate * branch, float32 or bf16 x, bf16 gate and branch) against the
// composed operations on the GPU: the same sum bit for bit (the product is rounded to bf16 before
// the add either way, and a bf16 stream's sum to bf16 after it), the same x and branch gradients,
// and the gate's per-sample sums to bf16 rounding; for a gate sliced out of a wider modulation
// output, as the models' modulation Linears give it.
// Skips where there is no GPU or the build has no kernels; on the CPU the composed path is taken.

#include <gtest/gtest.h>

#include "tests/trainer/gpu/FusedOpTestSupport.h"

#include "trainer/ops/GatedResidual.h"

#include <tuple>

namespace {

using namespace parallax;

struct Result {
    torch::Tensor out, dx, dgate, dbranch;
};

Result run(const torch::Tensor& x0, const torch::Tensor& mod0, const torch::Tensor& branch0,
           const torch::Tensor& upstream, bool fused) {
    torch::Tensor x = x0.clone().requires_grad_(true);
    torch::Tensor mod = mod0.clone().requires_grad_(true); // (B, 1, 3C): the gate is its last third
    torch::Tensor branch = branch0.clone().requires_grad_(true);
    const torch::Tensor gate = mod.chunk(3, -1)[2];
    if (fused) {
        EXPECT_TRUE(fusedGatedResidualApplies(x, gate, branch));
    }
    torch::Tensor out = fused ? gatedResidual(x, gate, branch) : x + gate * branch;
    out.backward(upstream);
    return {out.detach(), x.grad(), mod.grad().chunk(3, -1)[2], branch.grad()};
}

using test::relativeError;

class FusedGatedResidual : public ::testing::TestWithParam<test::AdaLnShape> {};

// `stream`: x's type, the residual stream's (float32, or qwen_image's bf16).
void expectTheComposedValues(const test::AdaLnShape& shape, torch::ScalarType stream) {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    const auto [batch, tokens, columns] = shape;
    const auto cuda = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kFloat32);
    torch::manual_seed(21);
    const torch::Tensor x = torch::randn({batch, tokens, columns}, cuda).to(stream);
    const torch::Tensor mod = (0.5 * torch::randn({batch, 1, 3 * columns}, cuda)).to(torch::kBFloat16);
    const torch::Tensor branch = torch::randn({batch, tokens, columns}, cuda).to(torch::kBFloat16);
    const torch::Tensor upstream = torch::randn({batch, tokens, columns}, cuda).to(stream);
    if (!fusedGatedResidualApplies(x, mod.chunk(3, -1)[2], branch))
        GTEST_SKIP() << "this build has no fused CUDA kernels";
    const Result fused = run(x, mod, branch, upstream, true);
    const Result composed = run(x, mod, branch, upstream, false);
    ASSERT_EQ(fused.out.scalar_type(), stream);
    EXPECT_TRUE(torch::equal(fused.out, composed.out)) << "the bf16 product then one add, either way";
    ASSERT_EQ(fused.dx.scalar_type(), stream);
    EXPECT_TRUE(torch::equal(fused.dx, composed.dx));
    ASSERT_EQ(fused.dbranch.scalar_type(), torch::kBFloat16);
    EXPECT_TRUE(torch::equal(fused.dbranch, composed.dbranch)) << "bf16(bf16(dout) * gate), either way";
    ASSERT_EQ(fused.dgate.scalar_type(), torch::kBFloat16);
    EXPECT_LT(relativeError(fused.dgate.to(torch::kFloat32), composed.dgate.to(torch::kFloat32)), 1e-2);
}

TEST_P(FusedGatedResidual, MatchesTheComposedProductAndSum) { expectTheComposedValues(GetParam(), torch::kFloat32); }

TEST_P(FusedGatedResidual, MatchesTheComposedFormOnABf16Stream) {
    expectTheComposedValues(GetParam(), torch::kBFloat16);
}

INSTANTIATE_TEST_SUITE_P(Shapes, FusedGatedResidual, test::adaLnShapes(), test::adaLnShapeName);

TEST(FusedGatedResidualCpu, TheComposedPathRunsOnTheCpu) {
    torch::manual_seed(22);
    const torch::Tensor x = torch::randn({2, 5, 8}), gate = torch::randn({2, 1, 8}), branch = torch::randn({2, 5, 8});
    EXPECT_FALSE(fusedGatedResidualApplies(x, gate, branch));
    EXPECT_TRUE(torch::equal(gatedResidual(x, gate, branch), x + gate * branch));
}

} // namespace

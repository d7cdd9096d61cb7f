// The fused CUDA cross-entropy against LibTorch's (float32) on the same GPU: loss and gradient for
// float32 and bf16 logits, vocabularies that take the vectorized and the scalar paths, ignored rows,
// and an upstream gradient other than one. Skips where there is no GPU or the build has no kernels.

#include <gtest/gtest.h>

#include "trainer/ops/CrossEntropy.h"

#include <tuple>

namespace {

using namespace parallax;

struct Result {
    double loss = 0;
    torch::Tensor grad;
};

Result run(const torch::Tensor& start, const torch::Tensor& labels, bool fused, double upstream) {
    torch::Tensor logits = start.clone().requires_grad_(true);
    torch::Tensor loss = fused ? crossEntropySum(logits, labels) : composedCrossEntropySum(logits, labels);
    EXPECT_EQ(loss.scalar_type(), torch::kFloat32);
    (loss * upstream).backward();
    return {loss.item<double>(), logits.grad()};
}

class FusedCrossEntropy : public ::testing::TestWithParam<std::tuple<torch::ScalarType, int64_t>> {};

TEST_P(FusedCrossEntropy, MatchesLibTorchOnTheGpu) {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    const auto [dtype, vocab] = GetParam();
    const auto cuda = torch::TensorOptions().device(torch::kCUDA);
    if (!fusedCrossEntropyApplies(torch::zeros({1, 1}, cuda.dtype(dtype))))
        GTEST_SKIP() << "this build has no fused CUDA kernels";
    torch::manual_seed(11);
    const int64_t rows = 67;
    const torch::Tensor start = (torch::randn({rows, vocab}, cuda.dtype(torch::kFloat32)) * 3).to(dtype);
    torch::Tensor labels = torch::randint(0, vocab, {rows}, cuda.dtype(torch::kLong));
    labels.index_put_({torch::arange(0, rows, 5, cuda.dtype(torch::kLong))}, -1); // every fifth row ignored

    const Result fused = run(start, labels, true, 0.75), reference = run(start, labels, false, 0.75);
    EXPECT_NEAR(fused.loss, reference.loss, 1e-5 * std::abs(reference.loss)) << "vocab " << vocab;
    ASSERT_EQ(fused.grad.scalar_type(), dtype);
    const double scale = reference.grad.abs().max().item<double>();
    const double diff = (fused.grad.to(torch::kFloat32) - reference.grad.to(torch::kFloat32)).abs().max().item<double>();
    // bf16 keeps 8 bits: one rounding step of the largest gradient; float32 to the exp's accuracy.
    const double tolerance = dtype == torch::kBFloat16 ? 8e-3 : 1e-5;
    EXPECT_LE(diff, tolerance * scale) << "vocab " << vocab;
    // Ignored rows get no gradient.
    EXPECT_EQ(fused.grad[0].abs().max().item<double>(), 0.0);
    EXPECT_EQ(fused.grad[5].abs().max().item<double>(), 0.0);
}

INSTANTIATE_TEST_SUITE_P(DtypesAndVocabularies, FusedCrossEntropy,
                         ::testing::Combine(::testing::Values(torch::kFloat32, torch::kBFloat16),
                                            ::testing::Values<int64_t>(50304, 1001, 8)));

TEST(FusedCrossEntropyErrors, RejectsMismatchedShapesWithTheirSizes) {
    const torch::Tensor logits = torch::zeros({4, 10});
    try {
        crossEntropySum(logits, torch::zeros({4, 1}, torch::kLong));
        FAIL() << "expected an error";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("2-d labels"), std::string::npos) << e.what();
    }
}

} // namespace

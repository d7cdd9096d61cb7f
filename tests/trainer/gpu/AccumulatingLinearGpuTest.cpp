// The accumulating Linear on a GPU under bf16 autocast against autograd's own path (autocast's cast
// copies, bf16 weight gradients cast and added): the same input gradient and fp32 weight and bias
// gradients to bf16 rounding, added into the existing gradient tensors; and the fused bias-gradient
// column sums against a float64 sum of the same bf16 values, for aligned, unaligned and sliced
// matrices. Skips without CUDA (the column sums' LibTorch path is checked on the CPU).

#include <gtest/gtest.h>

#include "trainer/compat/TorchCompat.h"
#include "trainer/ops/AccumulatingLinear.h"

#include <cmath>
#include <string>
#include <vector>

namespace {

using namespace parallax;

TEST(AccumulatingLinearGpu, MatchesAutocastAutogradInBf16) {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    torch::manual_seed(5);
    const auto cuda = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kFloat32);
    std::vector<torch::Tensor> wa, ba, wb, bb;
    for (int64_t width : {256, 128, 384}) {
        const torch::Tensor w = torch::randn({width, 512}, cuda) * 0.02, b = torch::randn({width}, cuda) * 0.02;
        for (auto [ws, bs] : {std::pair{&wa, &ba}, std::pair{&wb, &bb}}) {
            ws->push_back(w.clone().requires_grad_(true));
            ws->back().mutable_grad() = torch::full_like(w, 0.25);
            bs->push_back(b.clone().requires_grad_(true));
            bs->back().mutable_grad() = torch::full_like(b, 0.25);
        }
    }
    const torch::Tensor x0 = torch::randn({4, 1024, 512}, cuda);
    const torch::Tensor upstream = torch::randn({4, 1024, 768}, cuda);
    torch::Tensor xa = x0.clone().requires_grad_(true), xb = x0.clone().requires_grad_(true);
    const torch::Tensor gradObject = wa[0].grad();
    {
        compat::AutocastScope autocast(c10::DeviceType::CUDA, at::kBFloat16, true);
        ASSERT_TRUE(accumulatingLinearApplies(wa, ba));
        const torch::Tensor ya = torch::cat(accumulatingLinear(xa, wa, ba), -1);
        EXPECT_EQ(ya.scalar_type(), torch::kBFloat16);
        (ya.to(torch::kFloat32) * upstream).sum().backward();
        const torch::Tensor yb = torch::linear(xb, torch::cat(wb), torch::cat(bb));
        (yb.to(torch::kFloat32) * upstream).sum().backward();
    }
    auto relative = [](const torch::Tensor& a, const torch::Tensor& b) {
        return ((a - b).abs().max() / b.abs().max().clamp_min(1e-12)).item<double>();
    };
    EXPECT_LT(relative(xa.grad(), xb.grad()), 2e-2);
    for (size_t i = 0; i < wa.size(); ++i) {
        EXPECT_EQ(wa[i].grad().scalar_type(), torch::kFloat32);
        EXPECT_LT(relative(wa[i].grad() - 0.25, wb[i].grad() - 0.25), 2e-2) << "weight " << i;
        EXPECT_LT(relative(ba[i].grad() - 0.25, bb[i].grad() - 0.25), 2e-2) << "bias " << i;
    }
    EXPECT_TRUE(wa[0].grad().is_same(gradObject));
}

// out += x.sum(0) for x a (rows, width) view starting at column `offset` of (rows, stride) bf16 rows.
void checkColumnSums(const torch::Device& device, int64_t rows, int64_t width, int64_t stride, int64_t offset) {
    SCOPED_TRACE("rows " + std::to_string(rows) + ", width " + std::to_string(width) + " of " + std::to_string(stride) +
                 " at " + std::to_string(offset));
    torch::manual_seed(rows + width);
    const auto f32 = torch::TensorOptions().device(device).dtype(torch::kFloat32);
    const torch::Tensor wide = torch::randn({rows, stride}, f32).to(torch::kBFloat16);
    const torch::Tensor x = wide.narrow(1, offset, width);
    const torch::Tensor start = torch::randn({width}, f32);
    torch::Tensor out = start.clone();
    addColumnSums(out, x);
    const torch::Tensor expected = start.to(torch::kFloat64) + x.to(torch::kFloat64).sum(0);
    // float32 sums of `rows` values of magnitude ~1: a few float32 roundings per partial.
    const double tolerance = 1e-6 * std::sqrt(static_cast<double>(rows)) * 8 + 1e-6;
    EXPECT_LT((out.to(torch::kFloat64) - expected).abs().max().item<double>(), tolerance);
    if (device.is_cuda()) {
        torch::Tensor again = start.clone();
        addColumnSums(again, x);
        EXPECT_TRUE(torch::equal(out, again)) << "the same input must give the same bits";
    }
}

TEST(AccumulatingLinearGpu, FusedColumnSumsMatchFloat64Sums) {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
#if !defined(PARALLAX_CUDA_KERNELS) || !PARALLAX_CUDA_KERNELS
    GTEST_SKIP() << "the worker's CUDA kernels are not built here (no nvcc or no CUDA LibTorch)";
#endif
    const torch::Device cuda(torch::kCUDA);
    checkColumnSums(cuda, 16384, 768, 768, 0);     // a whole (B*T, C) output gradient
    checkColumnSums(cuda, 8192, 2048, 6144, 2048); // the k slice of a stacked q, k, v gradient
    checkColumnSums(cuda, 1000, 777, 777, 0);      // odd row stride: one column per lane
    checkColumnSums(cuda, 500, 48, 64, 2);         // groups of 8 columns, but not on 16 bytes
    checkColumnSums(cuda, 300, 5, 9, 1);           // odd start, fewer columns than a warp covers
    checkColumnSums(cuda, 1, 3, 3, 0);
    checkColumnSums(cuda, 257, 64, 128, 64);       // one row past two slices of 128
    checkColumnSums(cuda, 129, 264, 264, 0);       // a second block of columns holding one group
}

// accumulatingLinearGelu under bf16 autocast (on a GPU with the kernels: GELU's backward and the
// bias column sums in one pass) against autograd's linear then GELU: the same input, weight and
// bias gradients to bf16 rounding, for a width of 16-byte loads and an odd one; the bias gradient
// repeats bit for bit.
TEST(AccumulatingLinearGpu, GeluMatchesAutocastAutogradInBf16) {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    const auto cuda = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kFloat32);
    for (const int64_t width : {int64_t{2048}, int64_t{777}}) {
        SCOPED_TRACE("width " + std::to_string(width));
        torch::manual_seed(width);
        const torch::Tensor w0 = torch::randn({width, 512}, cuda) * 0.05, b0 = torch::randn({width}, cuda) * 0.5;
        const torch::Tensor x0 = torch::randn({4, 1024, 512}, cuda);
        const torch::Tensor upstream = torch::randn({4, 1024, width}, cuda);
        auto run = [&](bool fused) {
            torch::Tensor w = w0.clone().requires_grad_(true), b = b0.clone().requires_grad_(true);
            w.mutable_grad() = torch::full_like(w, 0.25);
            b.mutable_grad() = torch::full_like(b, 0.25);
            torch::Tensor x = x0.clone().requires_grad_(true);
            {
                compat::AutocastScope autocast(c10::DeviceType::CUDA, at::kBFloat16, true);
                const torch::Tensor y =
                    fused ? accumulatingLinearGelu(x, w, b) : torch::gelu(torch::linear(x, w, b), "tanh");
                EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
                (y.to(torch::kFloat32) * upstream).sum().backward();
            }
            return std::vector<torch::Tensor>{x.grad(), w.grad() - 0.25, b.grad() - 0.25};
        };
        const auto fused = run(true), again = run(true), composed = run(false);
        auto relative = [](const torch::Tensor& a, const torch::Tensor& b) {
            return ((a - b).abs().max() / b.abs().max().clamp_min(1e-12)).item<double>();
        };
        EXPECT_LT(relative(fused[0], composed[0]), 2e-2) << "input gradient";
        EXPECT_LT(relative(fused[1], composed[1]), 2e-2) << "weight gradient";
        EXPECT_LT(relative(fused[2], composed[2]), 2e-2) << "bias gradient";
        EXPECT_TRUE(torch::equal(fused[2], again[2])) << "the same input must give the same bias gradient";
    }
}

TEST(AccumulatingLinearGpu, ColumnSumsOnTheCpuUseLibTorch) {
    const torch::Device cpu(torch::kCPU);
    checkColumnSums(cpu, 300, 5, 9, 1);
    checkColumnSums(cpu, 64, 32, 32, 0);
}

} // namespace

// The accumulating Linear on a GPU under bf16 autocast against autograd's own path (autocast's cast
// copies, bf16 weight gradients cast and added): the same input gradient and fp32 weight and bias
// gradients to bf16 rounding, added into the existing gradient tensors. Skips without CUDA.

#include <gtest/gtest.h>

#include "trainer/compat/TorchCompat.h"
#include "trainer/models/AccumulatingLinear.h"

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
        const torch::Tensor ya = accumulatingLinear(xa, wa, ba);
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

} // namespace

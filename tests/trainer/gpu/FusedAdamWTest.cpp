// The fused CUDA AdamW against the elementwise one on the same GPU: same updates to fp32 rounding,
// with and without weight decay and gradient scaling; the worker's own kernel against LibTorch's
// fused AdamW, on aligned and unaligned slices. Skips where there is no GPU or no fused kernel.

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "trainer/compat/TorchCompat.h"
#include "trainer/train/AdamW.h"

namespace {

using namespace parallax;

struct Optimizer {
    AdamW optimizer;
    std::vector<torch::Tensor> params, grads;
};

// Three flat groups (two with decay, one without) with the same starting values for both optimizers.
Optimizer make(bool fused, const std::vector<torch::Tensor>& start, bool libtorchKernel = false) {
    AdamWOptions o;
    o.fused = fused;
    o.libtorchKernel = libtorchKernel;
    Optimizer s{AdamW(o), {}, {}};
    for (size_t i = 0; i < start.size(); ++i) {
        s.params.push_back(start[i].clone());
        s.grads.push_back(torch::zeros_like(start[i]));
        s.optimizer.addGroup(s.params.back(), s.grads.back(), /*decay=*/i != 1);
    }
    return s;
}

TEST(FusedAdamW, MatchesTheElementwiseUpdateOnTheGpu) {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    if (!compat::hasFusedAdamW()) GTEST_SKIP() << "this LibTorch has no fused AdamW";
    torch::manual_seed(7);
    const auto cuda = torch::TensorOptions().dtype(torch::kFloat).device(torch::kCUDA);
    const std::vector<torch::Tensor> start = {torch::randn({1 << 20}, cuda), torch::randn({4099}, cuda),
                                              torch::randn({300000}, cuda)};
    Optimizer fused = make(true, start), plain = make(false, start);
    for (int step = 0; step < 6; ++step) {
        for (size_t i = 0; i < start.size(); ++i) {
            const auto g = torch::randn_like(start[i]) * (0.1 * (step + 1));
            fused.grads[i].copy_(g);
            plain.grads[i].copy_(g);
        }
        const double lr = 1e-3 * (step + 1);
        const double scale = step % 2 ? 0.25 : 1.0; // clipping on every other step
        fused.optimizer.step(lr, scale);
        plain.optimizer.step(lr, scale);
        for (size_t i = 0; i < start.size(); ++i) {
            const double moved = (plain.params[i] - start[i]).abs().max().item<double>();
            const double diff = (fused.params[i] - plain.params[i]).abs().max().item<double>();
            ASSERT_GT(moved, 0.0);
            EXPECT_LT(diff, 1e-5 * std::max(1.0, moved)) << "step " << step << ", group " << i;
            const double m = (fused.optimizer.groups()[i].exp_avg - plain.optimizer.groups()[i].exp_avg)
                                 .abs().max().item<double>();
            EXPECT_LT(m, 1e-6) << "step " << step << ", group " << i;
        }
    }
}

// Clipping scale and skip decided on the device (the trainer's path): the fused kernel reads them
// there; a skipped update leaves parameters and moments as they were, even with NaN gradients.
TEST(FusedAdamW, ScaleAndSkipOnTheDeviceMatchTheElementwiseUpdate) {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    if (!compat::hasFusedAdamW()) GTEST_SKIP() << "this LibTorch has no fused AdamW";
    torch::manual_seed(11);
    const auto cuda = torch::TensorOptions().dtype(torch::kFloat).device(torch::kCUDA);
    const auto f64 = torch::TensorOptions().dtype(torch::kDouble).device(torch::kCUDA);
    const std::vector<torch::Tensor> start = {torch::randn({1 << 16}, cuda), torch::randn({513}, cuda)};
    Optimizer fused = make(true, start), plain = make(false, start);
    for (size_t i = 0; i < start.size(); ++i) {
        const auto g = torch::randn_like(start[i]);
        fused.grads[i].copy_(g);
        plain.grads[i].copy_(g);
    }
    const torch::Tensor scale = torch::full({}, 0.3, f64), keep = torch::zeros({}, f64).to(torch::kBool);
    fused.optimizer.step(1e-2, scale, keep);
    plain.optimizer.step(1e-2, scale, keep);
    std::vector<torch::Tensor> after;
    for (size_t i = 0; i < start.size(); ++i) {
        EXPECT_LT((fused.params[i] - plain.params[i]).abs().max().item<double>(), 1e-6) << "group " << i;
        EXPECT_GT((fused.params[i] - start[i]).abs().max().item<double>(), 0.0) << "group " << i;
        after.push_back(fused.params[i].clone());
        fused.grads[i].fill_(std::numeric_limits<float>::quiet_NaN());
    }
    const torch::Tensor expAvg = fused.optimizer.groups()[0].exp_avg.clone();
    fused.optimizer.step(1e-2, torch::full({}, 1.0, f64), torch::ones({}, f64).to(torch::kBool));
    for (size_t i = 0; i < start.size(); ++i) EXPECT_TRUE(torch::equal(fused.params[i], after[i])) << "group " << i;
    EXPECT_TRUE(torch::equal(fused.optimizer.groups()[0].exp_avg, expAvg));
    EXPECT_EQ(fused.optimizer.stepCount(), 2);
}

TEST(FusedAdamW, CpuTensorsTakeTheElementwisePath) {
    const std::vector<torch::Tensor> start = {torch::ones({16}), torch::ones({8})};
    Optimizer fused = make(true, start), plain = make(false, start);
    for (Optimizer* s : {&fused, &plain})
        for (auto& g : s->grads) g.fill_(0.5);
    fused.optimizer.step(1e-2, 0.5);
    plain.optimizer.step(1e-2, 0.5);
    for (size_t i = 0; i < start.size(); ++i) EXPECT_TRUE(torch::equal(fused.params[i], plain.params[i]));
}

// The worker's kernel (where built) against LibTorch's fused AdamW: groups that are slices of one
// buffer at odd offsets (no four-value loads) and of lengths that are not multiples of four, device
// scale and skip. Both do the same float32 arithmetic; only the order of a few roundings differs.
TEST(FusedAdamW, OwnKernelMatchesLibTorchsFusedAdamW) {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    if (!compat::hasFusedAdamW()) GTEST_SKIP() << "this LibTorch has no fused AdamW to compare with";
#if !defined(PARALLAX_CUDA_KERNELS) || !PARALLAX_CUDA_KERNELS
    GTEST_SKIP() << "the worker's CUDA kernels are not built here (no nvcc or no CUDA LibTorch)";
#endif
    torch::manual_seed(13);
    const auto cuda = torch::TensorOptions().dtype(torch::kFloat).device(torch::kCUDA);
    const auto f64 = torch::TensorOptions().dtype(torch::kDouble).device(torch::kCUDA);
    const torch::Tensor buffer = torch::randn({1 << 18}, cuda);
    const std::vector<torch::Tensor> start = {buffer.narrow(0, 1, 100003), buffer.narrow(0, 100004, 4097),
                                              torch::randn({1 << 17}, cuda)};
    Optimizer own = make(true, start), libtorch = make(true, start, /*libtorchKernel=*/true);
    for (int step = 0; step < 5; ++step) {
        for (size_t i = 0; i < start.size(); ++i) {
            const auto g = torch::randn_like(start[i]) * (0.2 * (step + 1));
            own.grads[i].copy_(g);
            libtorch.grads[i].copy_(g);
        }
        const torch::Tensor scale = torch::full({}, step % 2 ? 0.4 : 1.0, f64);
        const torch::Tensor skip = torch::full({}, step == 3 ? 1.0 : 0.0, f64).to(torch::kBool);
        const double lr = 2e-3 * (step + 1);
        own.optimizer.step(lr, scale, skip);
        libtorch.optimizer.step(lr, scale, skip);
        for (size_t i = 0; i < start.size(); ++i) {
            const double moved = (libtorch.params[i] - start[i]).abs().max().item<double>();
            ASSERT_GT(moved, 0.0);
            const double size = std::max(1.0, libtorch.params[i].abs().max().item<double>());
            EXPECT_LT((own.params[i] - libtorch.params[i]).abs().max().item<double>(), 2e-6 * size) // a few ulps
                << "step " << step << ", group " << i;
            for (auto moment : {&AdamW::Group::exp_avg, &AdamW::Group::exp_avg_sq}) {
                const torch::Tensor& a = own.optimizer.groups()[i].*moment;
                const torch::Tensor& b = libtorch.optimizer.groups()[i].*moment;
                EXPECT_LT((a - b).abs().max().item<double>(), 2e-6 * std::max(1.0, b.abs().max().item<double>()))
                    << "step " << step << ", group " << i;
            }
        }
    }
    // The skipped step (3) changed nothing in either: both counted five updates.
    EXPECT_EQ(own.optimizer.stepCount(), 5);
}

} // namespace

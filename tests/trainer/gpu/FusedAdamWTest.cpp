// The fused AdamW call against the optimizer of the training loop.

#include "trainer/compat/FusedAdamW.h"
#include "trainer/train/AdamW.h"

#include <gtest/gtest.h>

using namespace parallax;

namespace {

struct State {
    std::vector<torch::Tensor> params, grads, expAvgs, expAvgSqs;
};

State makeState(const torch::Device& device, int64_t n) {
    State s;
    torch::manual_seed(7);
    s.params.push_back(torch::randn({n}).to(device));
    s.grads.push_back(torch::randn({n}).to(device));
    s.expAvgs.push_back(torch::zeros({n}, s.params.back().options()));
    s.expAvgSqs.push_back(torch::zeros({n}, s.params.back().options()));
    return s;
}

TEST(FusedAdamW, LeavesCpuTensorsToTheLoop) {
    State s = makeState(torch::kCPU, 16);
    const auto before = s.params[0].clone();
    EXPECT_FALSE(compat::fusedAdamW(s.params, s.grads, s.expAvgs, s.expAvgSqs, 1, 1e-3, 0.9, 0.95, 0.1, 1e-8, 1.0));
    EXPECT_TRUE(torch::equal(s.params[0], before));
    EXPECT_TRUE(torch::equal(s.expAvgs[0], torch::zeros_like(before)));
}

TEST(FusedAdamW, RefusesMismatchedLists) {
    State s = makeState(torch::kCPU, 4);
    s.grads.clear();
    EXPECT_FALSE(compat::fusedAdamW(s.params, s.grads, s.expAvgs, s.expAvgSqs, 1, 1e-3, 0.9, 0.95, 0.1, 1e-8, 1.0));
}

TEST(FusedAdamW, MatchesTheLoopsAdamWOnTheGpu) {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    if (!compat::fusedAdamWAvailable()) GTEST_SKIP() << "this LibTorch has no fused AdamW (2.1 or later, CUDA)";
    const torch::Device gpu(torch::kCUDA, 0);
    const int64_t sizes[] = {1 << 20, 1000, 3};
    const bool decay[] = {true, false, true};
    AdamWOptions options; // betas 0.9 / 0.95, eps 1e-8, weight decay 0.1
    AdamW reference(options);
    std::vector<torch::Tensor> refGrads;
    std::vector<torch::Tensor> p[2], g[2], m[2], v[2]; // by decay: 0 off, 1 on
    torch::manual_seed(3);
    for (size_t i = 0; i < 3; ++i) {
        auto param = torch::randn({sizes[i]}).to(gpu);
        auto grad = torch::zeros_like(param);
        reference.addGroup(param.clone(), grad, decay[i]);
        refGrads.push_back(grad);
        const int k = decay[i] ? 1 : 0;
        p[k].push_back(param);
        g[k].push_back(torch::zeros_like(param));
        m[k].push_back(torch::zeros_like(param));
        v[k].push_back(torch::zeros_like(param));
    }
    const double lrs[] = {1e-3, 3e-3, 2e-3, 5e-4, 1e-4};
    const double scales[] = {1.0, 0.5, 1.0, 0.25, 1.0};
    for (int step = 0; step < 5; ++step) {
        size_t at[2] = {0, 0};
        for (size_t i = 0; i < 3; ++i) {
            auto fresh = torch::randn({sizes[i]}).to(gpu) * 3;
            refGrads[i].copy_(fresh);
            const int k = decay[i] ? 1 : 0;
            g[k][at[k]++].copy_(fresh);
        }
        reference.step(lrs[step], scales[step]);
        for (int k = 0; k < 2; ++k)
            ASSERT_TRUE(compat::fusedAdamW(p[k], g[k], m[k], v[k], step + 1, lrs[step], options.beta1, options.beta2,
                                           k == 1 ? options.weight_decay : 0.0, options.eps, scales[step]));
    }
    size_t at[2] = {0, 0};
    for (size_t i = 0; i < 3; ++i) {
        const int k = decay[i] ? 1 : 0;
        const size_t j = at[k]++;
        const AdamW::Group& ref = reference.groups()[i];
        EXPECT_TRUE(torch::allclose(p[k][j], ref.param, 1e-5, 1e-7)) << "param " << i;
        EXPECT_TRUE(torch::allclose(m[k][j], ref.exp_avg, 1e-5, 1e-7)) << "exp_avg " << i;
        EXPECT_TRUE(torch::allclose(v[k][j], ref.exp_avg_sq, 1e-5, 1e-9)) << "exp_avg_sq " << i;
    }
}

} // namespace

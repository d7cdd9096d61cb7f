#include "trainer/train/AdamW.h"

#include <gtest/gtest.h>

#include <limits>

using namespace parallax;

TEST(AdamW, MatchesLibTorchAdamWStepForStep) {
    torch::manual_seed(3);
    auto ref = torch::randn({64}).set_requires_grad(true);
    auto mine = ref.detach().clone();
    auto grad = torch::zeros({64});
    torch::optim::AdamW reference({ref}, torch::optim::AdamWOptions(2e-3).betas({0.9, 0.95}).eps(1e-8).weight_decay(0.1));
    AdamWOptions o;
    o.beta1 = 0.9;
    o.beta2 = 0.95;
    o.eps = 1e-8;
    o.weight_decay = 0.1;
    AdamW adam(o);
    adam.addGroup(mine, grad, /*decay=*/true);
    for (int step = 0; step < 10; ++step) {
        auto g = torch::randn({64});
        ref.mutable_grad() = g.clone();
        grad.copy_(g);
        reference.step();
        adam.step(2e-3);
        EXPECT_LT((ref.detach() - mine).abs().max().item<double>(), 1e-6) << "step " << step;
    }
    EXPECT_EQ(adam.stepCount(), 10);
}

TEST(AdamW, NoDecayGroupIsOnlyMovedByItsGradient) {
    AdamW adam(AdamWOptions{});
    auto p = torch::ones({4});
    auto g = torch::zeros({4});
    adam.addGroup(p, g, /*decay=*/false);
    adam.step(0.1);
    EXPECT_TRUE(torch::equal(p, torch::ones({4})));
}

TEST(AdamW, GradientScaleActsLikeScaledGradients) {
    auto p1 = torch::ones({8}), p2 = torch::ones({8});
    auto g = torch::linspace(-1, 1, 8);
    auto g1 = g * 0.25, g2 = g.clone();
    AdamW a(AdamWOptions{}), b(AdamWOptions{});
    a.addGroup(p1, g1, true);
    b.addGroup(p2, g2, true);
    a.step(0.01);
    b.step(0.01, 0.25);
    EXPECT_LT((p1 - p2).abs().max().item<double>(), 1e-7);
}

TEST(AdamW, ScaleAndSkipHeldInTensorsActLikeHostValues) {
    auto p1 = torch::ones({8}), p2 = torch::ones({8});
    auto g = torch::linspace(-1, 1, 8);
    auto g1 = g.clone(), g2 = g.clone();
    AdamW a(AdamWOptions{}), b(AdamWOptions{});
    a.addGroup(p1, g1, true);
    b.addGroup(p2, g2, true);
    a.step(0.01, 0.25);
    b.step(0.01, torch::full({}, 0.25, torch::kDouble), torch::tensor(false));
    EXPECT_TRUE(torch::equal(p1, p2));
    EXPECT_EQ(b.stepCount(), 1);
}

TEST(AdamW, SkippedUpdateChangesNothingButCounts) {
    auto p = torch::linspace(0, 1, 8);
    auto g = torch::full({8}, std::numeric_limits<float>::quiet_NaN());
    AdamW adam(AdamWOptions{});
    adam.addGroup(p, g, true);
    const torch::Tensor before = p.clone();
    adam.step(0.01, torch::ones({}, torch::kDouble), torch::tensor(true));
    EXPECT_TRUE(torch::equal(p, before));
    EXPECT_TRUE(torch::equal(adam.groups()[0].exp_avg, torch::zeros({8})));
    EXPECT_TRUE(torch::equal(adam.groups()[0].exp_avg_sq, torch::zeros({8})));
    EXPECT_EQ(adam.stepCount(), 1);
}

TEST(AdamW, UpdateOrderCallsBackPerGroupAndChangesNoValue) {
    torch::manual_seed(11);
    const std::vector<int64_t> sizes = {5, 17, 3, 9};
    AdamW plain(AdamWOptions{}), ordered(AdamWOptions{});
    std::vector<torch::Tensor> grads;
    for (size_t i = 0; i < sizes.size(); ++i) {
        const torch::Tensor p = torch::randn({sizes[i]});
        grads.push_back(torch::randn({sizes[i]}));
        plain.addGroup(p.clone(), grads.back(), i % 2 == 0);
        ordered.addGroup(p.clone(), grads.back(), i % 2 == 0);
    }
    std::vector<size_t> called;
    // Each call sees its own group already updated and the later ones not yet.
    std::vector<torch::Tensor> before;
    for (auto& g : ordered.groups()) before.push_back(g.param.clone());
    bool skipping = false;
    ordered.setUpdateOrder({2, 0, 3, 1}, [&](size_t group) {
        EXPECT_EQ(torch::equal(ordered.groups()[group].param, before[group]), skipping) << "group " << group;
        if (group == 2) {
            EXPECT_TRUE(torch::equal(ordered.groups()[0].param, before[0]));
        }
        called.push_back(group);
    });
    for (int step = 0; step < 3; ++step) {
        plain.step(1e-2, torch::full({}, 0.5, torch::kDouble), torch::tensor(false));
        ordered.step(1e-2, torch::full({}, 0.5, torch::kDouble), torch::tensor(false));
        for (auto& g : ordered.groups()) before[&g - ordered.groups().data()] = g.param.clone();
    }
    // A skipped step still calls back for every group (the gathers it starts read unchanged slices).
    skipping = true;
    ordered.step(1e-2, torch::ones({}, torch::kDouble), torch::tensor(true));
    plain.step(1e-2, torch::ones({}, torch::kDouble), torch::tensor(true));
    EXPECT_EQ(called, (std::vector<size_t>{2, 0, 3, 1, 2, 0, 3, 1, 2, 0, 3, 1, 2, 0, 3, 1}));
    for (size_t i = 0; i < sizes.size(); ++i)
        EXPECT_TRUE(torch::equal(plain.groups()[i].param, ordered.groups()[i].param)) << "group " << i;

    EXPECT_THROW(ordered.setUpdateOrder({0, 1, 1, 2}, nullptr), std::invalid_argument);
    EXPECT_THROW(ordered.setUpdateOrder({0, 1, 2}, nullptr), std::invalid_argument);
    EXPECT_THROW(ordered.setUpdateOrder({0, 1, 2, 4}, nullptr), std::invalid_argument);
}

TEST(LearningRate, WarmupThenCosineToTheFloor) {
    EXPECT_DOUBLE_EQ(learningRate(0, 100, 10, 1.0, 0.1), 0.1);
    EXPECT_DOUBLE_EQ(learningRate(9, 100, 10, 1.0, 0.1), 1.0);
    EXPECT_DOUBLE_EQ(learningRate(10, 100, 10, 1.0, 0.1), 1.0);
    EXPECT_NEAR(learningRate(55, 100, 10, 1.0, 0.1), 0.55, 1e-12); // half way: (1 + 0.1) / 2
    EXPECT_NEAR(learningRate(100, 100, 10, 1.0, 0.1), 0.1, 1e-12);
    EXPECT_DOUBLE_EQ(learningRate(0, 10, 0, 2.0, 0.0), 2.0);
}

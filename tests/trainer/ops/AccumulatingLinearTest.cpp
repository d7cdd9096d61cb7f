// The accumulating Linear against autograd's own accumulation: same input gradient, weight and bias
// gradients added into the existing .grad() tensors (twice gives twice), stacked weights split back
// per layer, the reducers' hooks called once per parameter and backward, and the plain product where
// a parameter has no gradient tensor yet.

#include <gtest/gtest.h>

#include "trainer/compat/TorchCompat.h"
#include "trainer/ops/AccumulatingLinear.h"
#include "trainer/models/Linear.h"

#include <map>

namespace {

using namespace parallax;

struct Params {
    std::vector<torch::Tensor> weights, biases;
};

Params make(const std::vector<int64_t>& widths, int64_t in, bool withBias, bool withGrads) {
    Params p;
    for (int64_t w : widths) {
        p.weights.push_back(torch::randn({w, in}).requires_grad_(true));
        if (withBias) p.biases.push_back(torch::randn({w}).requires_grad_(true));
    }
    if (withGrads)
        for (auto* list : {&p.weights, &p.biases})
            for (torch::Tensor& t : *list) t.mutable_grad() = torch::full_like(t, 0.5); // earlier micro-batch
    return p;
}

Params copy(const Params& from) {
    Params p;
    for (const torch::Tensor& t : from.weights) {
        p.weights.push_back(t.detach().clone().requires_grad_(true));
        p.weights.back().mutable_grad() = t.grad().clone();
    }
    for (const torch::Tensor& t : from.biases) {
        p.biases.push_back(t.detach().clone().requires_grad_(true));
        p.biases.back().mutable_grad() = t.grad().clone();
    }
    return p;
}

void expectClose(const torch::Tensor& a, const torch::Tensor& b, const std::string& what) {
    ASSERT_TRUE(a.defined() && b.defined()) << what;
    EXPECT_TRUE(torch::allclose(a, b, 1e-5, 1e-6)) << what << ": max difference "
                                                   << (a - b).abs().max().item<double>();
}

TEST(AccumulatingLinear, MatchesAutogradForStackedWeightsWithAndWithoutBias) {
    torch::manual_seed(3);
    for (const bool withBias : {true, false}) {
        const Params fused = make({5, 3, 4}, 6, withBias, /*withGrads=*/true);
        const Params plain = copy(fused);
        ASSERT_TRUE(accumulatingLinearApplies(fused.weights, fused.biases));
        const torch::Tensor x0 = torch::randn({2, 7, 6});
        const torch::Tensor upstream = torch::randn({2, 7, 12});

        torch::Tensor xa = x0.clone().requires_grad_(true);
        (torch::cat(accumulatingLinear(xa, fused.weights, fused.biases), -1) * upstream).sum().backward();

        torch::Tensor xb = x0.clone().requires_grad_(true);
        const torch::Tensor y = torch::linear(xb, torch::cat(plain.weights),
                                              withBias ? torch::cat(plain.biases) : torch::Tensor());
        (y * upstream).sum().backward();

        expectClose(xa.grad(), xb.grad(), "input gradient");
        for (size_t i = 0; i < fused.weights.size(); ++i) {
            expectClose(fused.weights[i].grad(), plain.weights[i].grad(), "weight " + std::to_string(i));
            if (withBias) expectClose(fused.biases[i].grad(), plain.biases[i].grad(), "bias " + std::to_string(i));
        }
    }
}

TEST(AccumulatingLinear, StackedOutputsAreSlicesWhoseGradientsArriveSeparately) {
    torch::manual_seed(6);
    const Params fused = make({3, 2, 4}, 5, true, true);
    const Params plain = copy(fused);
    const torch::Tensor x0 = torch::randn({6, 5});
    torch::Tensor xa = x0.clone().requires_grad_(true);
    const std::vector<torch::Tensor> parts = accumulatingLinear(xa, fused.weights, fused.biases);
    ASSERT_EQ(parts.size(), 3u);
    EXPECT_EQ(parts[0].sizes(), (std::vector<int64_t>{6, 3}));
    EXPECT_EQ(parts[2].sizes(), (std::vector<int64_t>{6, 4}));
    // Only the first and last slices reach the loss: the middle layer's gradients stay as they were.
    (parts[0].sum() * 2 + (parts[2] * parts[2]).sum()).backward();

    torch::Tensor xb = x0.clone().requires_grad_(true);
    std::vector<torch::Tensor> ref;
    for (size_t i = 0; i < 3; ++i) ref.push_back(torch::linear(xb, plain.weights[i], plain.biases[i]));
    (ref[0].sum() * 2 + (ref[2] * ref[2]).sum()).backward();
    expectClose(xa.grad(), xb.grad(), "input gradient");
    for (size_t i = 0; i < 3; ++i) {
        expectClose(fused.weights[i].grad(), plain.weights[i].grad(), "weight " + std::to_string(i));
        expectClose(fused.biases[i].grad(), plain.biases[i].grad(), "bias " + std::to_string(i));
    }
    expectClose(fused.weights[1].grad(), torch::full_like(fused.weights[1], 0.5), "unused weight");
}

TEST(AccumulatingLinear, GeluMatchesAutogradWithAndWithoutBias) {
    torch::manual_seed(7);
    for (const bool withBias : {true, false}) {
        const Params fused = make({5}, 4, withBias, /*withGrads=*/true);
        const Params plain = copy(fused);
        const torch::Tensor bias = withBias ? fused.biases[0] : torch::Tensor();
        const torch::Tensor x0 = torch::randn({3, 6, 4}) * 2;
        const torch::Tensor upstream = torch::randn({3, 6, 5});
        torch::Tensor xa = x0.clone().requires_grad_(true);
        const torch::Tensor ya = accumulatingLinearGelu(xa, fused.weights[0], bias);
        (ya * upstream).sum().backward();
        torch::Tensor xb = x0.clone().requires_grad_(true);
        const torch::Tensor yb =
            torch::gelu(torch::linear(xb, plain.weights[0], withBias ? plain.biases[0] : torch::Tensor()), "tanh");
        (yb * upstream).sum().backward();
        expectClose(ya, yb, "output");
        expectClose(xa.grad(), xb.grad(), "input gradient");
        expectClose(fused.weights[0].grad(), plain.weights[0].grad(), "weight");
        if (withBias) expectClose(fused.biases[0].grad(), plain.biases[0].grad(), "bias");
    }
}

TEST(AccumulatingLinear, AddsIntoTheSameGradientTensorAndCallsEachHookOnce) {
    torch::manual_seed(4);
    const Params p = make({4}, 3, true, true);
    const torch::Tensor weightGrad = p.weights[0].grad(); // a bucket view in the trainer
    std::map<std::string, int> calls;
    auto hw = compat::addPostAccumulateHook(p.weights[0], [&] { ++calls["weight"]; });
    auto hb = compat::addPostAccumulateHook(p.biases[0], [&] { ++calls["bias"]; });
    const torch::Tensor x = torch::randn({5, 3});
    const torch::Tensor once = torch::mm(torch::ones({5, 4}).t(), x); // d(sum y)/dW
    for (int pass = 1; pass <= 2; ++pass) {
        accumulatingLinear(x, p.weights, p.biases).front().sum().backward();
        EXPECT_EQ(calls["weight"], pass);
        EXPECT_EQ(calls["bias"], pass);
    }
    EXPECT_TRUE(p.weights[0].grad().is_same(weightGrad)) << "the gradient tensor must stay the same object";
    expectClose(weightGrad, torch::full_like(weightGrad, 0.5) + 2 * once, "two passes");
    expectClose(p.biases[0].grad(), torch::full({4}, 0.5 + 2 * 5.0), "bias after two passes");
}

TEST(AccumulatingLinear, AppliesOnlyWhileRecordingWithGradientTensorsInPlace) {
    const Params withGrads = make({2}, 2, true, true);
    const Params without = make({2}, 2, true, false);
    EXPECT_TRUE(accumulatingLinearApplies(withGrads.weights, withGrads.biases));
    EXPECT_FALSE(accumulatingLinearApplies(without.weights, without.biases));
    {
        torch::NoGradGuard noGrad;
        EXPECT_FALSE(accumulatingLinearApplies(withGrads.weights, withGrads.biases));
    }
    // A Linear without gradient tensors trains through autograd as before.
    Linear layer(3, 2, true, 0.02);
    {
        torch::NoGradGuard noGrad;
        layer.weight.normal_();
        layer.bias.zero_();
    }
    layer.forward(torch::randn({4, 3})).sum().backward();
    ASSERT_TRUE(layer.weight.grad().defined());
    ASSERT_TRUE(layer.bias.grad().defined());
    EXPECT_DOUBLE_EQ(layer.bias.grad().sum().item<double>(), 8.0);
}

} // namespace

// A split backward (zb1) leaves the Linear layers' weight gradients to the W pass and computes
// everything else; the W pass then adds exactly what the whole backward would have.

#include "trainer/parallel/WeightGradQueue.h"

#include "tests/trainer/models/ModelTestSupport.h"
#include "trainer/models/Linear.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

using namespace parallax;

namespace {

// The trainer gives every parameter a .grad() before backward; products accumulate only then.
void giveGrads(torch::nn::Module& m) {
    for (auto& p : m.parameters())
        if (p.requires_grad()) p.mutable_grad() = torch::zeros_like(p);
}

std::map<std::string, torch::Tensor> gradsOf(torch::nn::Module& m) {
    std::map<std::string, torch::Tensor> out;
    for (const auto& item : m.named_parameters())
        if (item.value().grad().defined()) out[item.key()] = item.value().grad().clone();
    return out;
}

} // namespace

TEST(WeightGradQueue, TheBackwardLeavesTheWeightGradientsToTheWPass) {
    torch::manual_seed(3);
    Linear plain(6, 6, true, 0.5), split(6, 6, true, 0.5);
    {
        torch::NoGradGuard g;
        plain.weight.normal_(0, 0.5);
        plain.bias.uniform_();
        split.weight.copy_(plain.weight);
        split.bias.copy_(plain.bias);
    }
    giveGrads(plain);
    giveGrads(split);
    auto queue = std::make_shared<WeightGradQueue>();
    split.weight_grad_deferral = queue;

    // The layer twice, through the plain product and through the one fused with GELU.
    const torch::Tensor x = torch::randn({3, 4, 6}); // (B, T, C)
    const torch::Tensor xa = x.clone().requires_grad_(true), xb = x.clone().requires_grad_(true);
    plain.forwardGelu(plain.forward(xa)).sum().backward();
    queue->beginBackward(0);
    split.forwardGelu(split.forward(xb)).sum().backward();
    queue->endBackward();

    // B: the input and bias gradients are there, the weight's not yet (one product waits per call).
    EXPECT_TRUE(torch::allclose(xa.grad(), xb.grad(), 1e-6, 1e-6));
    EXPECT_TRUE(torch::allclose(plain.bias.grad(), split.bias.grad(), 1e-6, 1e-6));
    EXPECT_EQ(split.weight.grad().abs().max().item<double>(), 0.0);
    EXPECT_EQ(queue->pending(), 2u);
    EXPECT_EQ(queue->run(1), 0u) << "another micro-batch's W finds nothing";
    // W: the same sum as the whole backward, without history.
    EXPECT_EQ(queue->run(0), 2u);
    EXPECT_EQ(queue->pending(), 0u);
    EXPECT_TRUE(torch::allclose(plain.weight.grad(), split.weight.grad(), 1e-6, 1e-6));
    EXPECT_FALSE(split.weight.grad().requires_grad());

    // Outside a backward the engine announced, a layer holding the queue computes at once.
    giveGrads(split);
    split.forward(x).sum().backward();
    EXPECT_EQ(queue->pending(), 0u);
    EXPECT_GT(split.weight.grad().abs().max().item<double>(), 0.0);
    // One backward at a time: a second would take the first's products for its own.
    queue->beginBackward(1);
    EXPECT_THROW(queue->beginBackward(2), std::logic_error);
    queue->endBackward();
}

TEST(WeightGradQueue, StackedLayersHandOverEachWeightOnlyWhenTheyShareTheQueue) {
    torch::manual_seed(4);
    Linear q(8, 4, false, 0.5), k(8, 4, false, 0.5);
    {
        torch::NoGradGuard g;
        q.weight.normal_(0, 0.5);
        k.weight.normal_(0, 0.5);
    }
    giveGrads(q);
    giveGrads(k);
    auto queue = std::make_shared<WeightGradQueue>();
    q.weight_grad_deferral = queue;
    k.weight_grad_deferral = queue;
    const torch::Tensor x = torch::randn({5, 8}).requires_grad_(true);
    queue->beginBackward(2);
    auto out = linearStack(x, {&q, &k});
    (out[0] * out[1]).sum().backward();
    queue->endBackward();
    EXPECT_EQ(queue->pending(), 2u) << "one product per weight of the stack";
    EXPECT_EQ(q.weight.grad().abs().max().item<double>(), 0.0);
    queue->run(2);
    EXPECT_GT(q.weight.grad().abs().max().item<double>(), 0.0);
    EXPECT_GT(k.weight.grad().abs().max().item<double>(), 0.0);

    // A layer without the queue is not stacked with one that has it: each keeps its own rule.
    k.weight_grad_deferral = nullptr;
    giveGrads(q);
    giveGrads(k);
    queue->beginBackward(3);
    out = linearStack(x, {&q, &k});
    (out[0] * out[1]).sum().backward();
    queue->endBackward();
    EXPECT_EQ(queue->pending(), 1u);
    EXPECT_GT(k.weight.grad().abs().max().item<double>(), 0.0);
    EXPECT_EQ(q.weight.grad().abs().max().item<double>(), 0.0);
    queue->run(3);
}

// Every model kind's Linear layers hand their weight gradients over on the CPU path the trainer
// takes (parameters with .grad()), and the W pass restores the whole backward's gradients.
TEST(WeightGradQueue, EveryModelKindsLinearLayersDefer) {
    for (const char* kind : {"gpt", "qwen2_5_vl", "qwen_image"}) {
        const ModelDims dims = test::dimsOf(kind, "tiny");
        const auto plain = buildModel(dims, 11), split = buildModel(dims, 11);
        giveGrads(*plain);
        giveGrads(*split);
        auto queue = std::make_shared<WeightGradQueue>();
        int trainable = 0;
        for (const auto& module : split->modules(false))
            if (auto* linear = dynamic_cast<Linear*>(module.get())) {
                linear->weight_grad_deferral = queue;
                trainable += linear->weight.requires_grad() ? 1 : 0;
            }
        ASSERT_GT(trainable, 0) << kind;
        // qwen2_5_vl with an image, so that its tower's and merger's Linears take part.
        const Batch batch = dims.kind == ModelKind::Qwen2_5_Vl ? test::vlImageBatch(dims, 2) : test::batchOf(dims, 2);
        plain->forwardAll(batch).at(0).backward();
        queue->beginBackward(0);
        split->forwardAll(batch).at(0).backward();
        queue->endBackward();
        // One entry per product: layers that read the same input (qwen's q, k and v) share one.
        EXPECT_GT(queue->pending(), 0u) << kind;
        // No trainable Linear computed its weight gradient in B.
        for (const auto& module : split->named_modules()) {
            if (auto* linear = dynamic_cast<Linear*>(module.value().get()); linear && linear->weight.requires_grad()) {
                EXPECT_EQ(linear->weight.grad().abs().max().item<double>(), 0.0) << kind << " " << module.key();
            }
        }
        queue->run(0);
        const auto expected = gradsOf(*plain), got = gradsOf(*split);
        ASSERT_EQ(expected.size(), got.size()) << kind;
        for (const auto& [name, g] : expected)
            EXPECT_TRUE(torch::allclose(g, got.at(name), 1e-5, 1e-7)) << kind << " " << name;
    }
}

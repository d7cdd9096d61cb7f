#include "trainer/parallel/ActivationCheckpoint.h"

#include <gtest/gtest.h>

using namespace parallax;

namespace {

// y = tanh(x W): counts its forwards.
class CountingBlock : public Unit {
public:
    CountingBlock() { weight = register_parameter("weight", torch::randn({8, 8}) * 0.3); }
    Activation forward(const Activation& in, const Batch&) override {
        ++forwards;
        return {torch::tanh(torch::matmul(in.at(0), weight))};
    }
    std::string kindName() const override { return "block"; }
    bool checkpointUnit() const override { return declared; }
    torch::Tensor weight;
    int forwards = 0;
    bool declared = true;
};

} // namespace

TEST(ActivationCheckpoint, RecomputesTheBlockAndGivesTheSameGradients) {
    torch::manual_seed(5);
    auto plain = std::make_shared<CountingBlock>();
    auto recomputed = std::make_shared<CountingBlock>();
    {
        torch::NoGradGuard g;
        recomputed->weight.copy_(plain->weight);
    }
    std::vector<StageChunk> chunks(1);
    chunks[0].units = {recomputed};
    chunks[0].indices = {0};
    checkpointBlocks(chunks);
    ASSERT_NE(chunks[0].units[0].get(), recomputed.get()) << "the block is wrapped";

    Batch batch;
    auto x = torch::randn({4, 8});
    auto xa = x.clone().requires_grad_(true), xb = x.clone().requires_grad_(true);
    auto ya = plain->forward({xa}, batch).at(0);
    auto yb = chunks[0].units[0]->forward({xb}, batch).at(0);
    EXPECT_TRUE(torch::allclose(ya, yb));
    EXPECT_FALSE(yb.grad_fn() == nullptr);
    ya.pow(2).sum().backward();
    yb.pow(2).sum().backward();
    EXPECT_EQ(plain->forwards, 1);
    EXPECT_EQ(recomputed->forwards, 2) << "forward runs again in backward";
    EXPECT_TRUE(torch::allclose(plain->weight.grad(), recomputed->weight.grad(), 1e-6, 1e-7));
    EXPECT_TRUE(torch::allclose(xa.grad(), xb.grad(), 1e-6, 1e-7));
}

TEST(ActivationCheckpoint, InputWithoutGradientRunsNormally) {
    auto block = std::make_shared<CountingBlock>();
    std::vector<StageChunk> chunks(1);
    chunks[0].units = {block};
    chunks[0].indices = {0};
    checkpointBlocks(chunks);
    Batch batch;
    auto y = chunks[0].units[0]->forward({torch::randn({2, 8})}, batch).at(0);
    y.sum().backward();
    EXPECT_EQ(block->forwards, 1);
    EXPECT_TRUE(block->weight.grad().defined());
}

// Which units are recomputed is the model's declaration, not their kind's name.
TEST(ActivationCheckpoint, OnlyTheUnitsTheModelDeclaresAreWrapped) {
    auto declared = std::make_shared<CountingBlock>();
    auto undeclared = std::make_shared<CountingBlock>(); // named "block" all the same
    undeclared->declared = false;
    std::vector<StageChunk> chunks(1);
    chunks[0].units = {declared, undeclared};
    chunks[0].indices = {0, 1};
    checkpointBlocks(chunks);
    EXPECT_NE(chunks[0].units[0].get(), declared.get());
    EXPECT_TRUE(chunks[0].units[0]->checkpointUnit()) << "the wrapper keeps the declaration";
    EXPECT_EQ(chunks[0].units[1].get(), undeclared.get());
}

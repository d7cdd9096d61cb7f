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

// train.recompute_blocks: the first `limit` declared units that train, over the rank's chunks in
// order; a frozen one is passed over without being counted, and the rest keep their activations.
TEST(ActivationCheckpoint, ALimitWrapsTheFirstBlocksThatTrain) {
    std::vector<std::shared_ptr<CountingBlock>> blocks;
    for (int i = 0; i < 5; ++i) blocks.push_back(std::make_shared<CountingBlock>());
    blocks[0]->weight.requires_grad_(false); // a frozen block: not counted, not wrapped
    std::vector<StageChunk> chunks(2);
    chunks[0].units = {blocks[0], blocks[1]};
    chunks[0].indices = {0, 1};
    chunks[1].units = {blocks[2], blocks[3], blocks[4]};
    chunks[1].indices = {4, 5, 6};
    checkpointBlocks(chunks, 2);
    EXPECT_EQ(chunks[0].units[0].get(), blocks[0].get());
    EXPECT_NE(chunks[0].units[1].get(), blocks[1].get());
    EXPECT_NE(chunks[1].units[0].get(), blocks[2].get());
    EXPECT_EQ(chunks[1].units[1].get(), blocks[3].get());
    EXPECT_EQ(chunks[1].units[2].get(), blocks[4].get());

    // The wrapped ones run forward twice in backward, the others once; the gradients flow through all.
    Batch batch;
    Activation a = {torch::randn({3, 8}).requires_grad_(true)};
    const torch::Tensor x = a[0];
    for (StageChunk& chunk : chunks)
        for (auto& unit : chunk.units) a = unit->forward(a, batch);
    a.at(0).sum().backward();
    EXPECT_EQ(blocks[1]->forwards, 2);
    EXPECT_EQ(blocks[2]->forwards, 2);
    EXPECT_EQ(blocks[3]->forwards, 1);
    EXPECT_EQ(blocks[4]->forwards, 1);
    EXPECT_TRUE(x.grad().defined());
    for (int i = 1; i < 5; ++i) EXPECT_TRUE(blocks[i]->weight.grad().defined()) << i;
}

// Token tables under data parallelism: each rank's token ids and gradient rows are all-gathered
// and every rank builds the table's gradient from all of them, instead of reducing the whole table.
// A one-process communicator mirroring a second replica shows the result equals the reduction of
// the whole table (twice the local gradient), that the table went over the wire as gathered rows
// and not as a reduction, for ZeRO stages 0 and 2, over two micro-batches.

#include "tests/trainer/support/MirrorCommunicator.h"
#include "trainer/models/Embedding.h"
#include "trainer/parallel/DataParallel.h"
#include "trainer/parallel/GradBuckets.h"

#include <gtest/gtest.h>

using namespace parallax;
using parallax::testing::MirrorCommunicator;

namespace {

struct Lookup : torch::nn::Module {
    Lookup() {
        tok = register_module("tok", std::make_shared<Embedding>(40, 6));
        out = register_module("out", torch::nn::Linear(6, 3));
        torch::NoGradGuard noGrad;
        tok->weight.normal_();
    }
    torch::Tensor forward(const torch::Tensor& tokens) { return out(torch::tanh(tok->forward(tokens))); }
    std::shared_ptr<Embedding> tok;
    torch::nn::Linear out{nullptr};
};

struct Outcome {
    std::vector<torch::Tensor> grads; // per bucket: whole (stage 0) or this rank's slice (stage 2)
    int gathers = 0;
    int64_t reducedValues = 0;
    int64_t exchanges = 0;
    int64_t tableBucketValues = 0;
};

Outcome step(int stage, bool exchange) {
    torch::manual_seed(9);
    Lookup model;
    std::vector<std::pair<std::string, torch::Tensor>> named;
    for (const auto& p : model.named_parameters()) named.emplace_back(p.key(), p.value());
    BucketOptions options;
    options.padMultiple = 2;
    options.alone = {"tok.weight"};
    GradBuckets buckets(named, options);
    auto comm = std::make_shared<MirrorCommunicator>();
    DataParallel dp(buckets, comm, stage);
    if (exchange) {
        EXPECT_TRUE(dp.exchangeRowsOf(*model.tok, "tok.weight"));
    }
    // Two micro-batches; tokens repeat within and across them.
    const std::vector<torch::Tensor> micro = {torch::tensor({{1, 5, 5, 7}, {0, 39, 1, 1}}),
                                              torch::tensor({{5, 2, 2, 2}, {38, 0, 7, 3}})};
    buckets.zeroGrads();
    dp.beginStep(2);
    for (const torch::Tensor& tokens : micro) model.forward(tokens).pow(2).sum().backward();
    dp.finishStep();
    Outcome o;
    for (size_t b = 0; b < buckets.buckets().size(); ++b) {
        o.grads.push_back(dp.gradShard(b).clone());
        for (int slot : buckets.buckets()[b].slots)
            if (buckets.slots()[static_cast<size_t>(slot)].name == "tok.weight") o.tableBucketValues = buckets.buckets()[b].numel();
    }
    o.gathers = comm->gathers;
    o.reducedValues = comm->reducedValues;
    o.exchanges = dp.rowExchanges();
    return o;
}

} // namespace

TEST(RowExchange, GatheredRowsGiveTheReducedTableGradient) {
    for (const int stage : {0, 2}) {
        SCOPED_TRACE("stage " + std::to_string(stage));
        const Outcome whole = step(stage, false), rows = step(stage, true);
        ASSERT_EQ(whole.grads.size(), rows.grads.size());
        for (size_t b = 0; b < whole.grads.size(); ++b) {
            EXPECT_TRUE(torch::allclose(rows.grads[b], whole.grads[b], 1e-6, 1e-7)) << "bucket " << b;
            EXPECT_GT(whole.grads[b].abs().max().item<double>(), 0.0) << "bucket " << b;
        }
        // The table crossed as two gathers (ids and rows), never in a reduction.
        EXPECT_EQ(whole.gathers, 0);
        EXPECT_EQ(rows.gathers, 2);
        EXPECT_EQ(rows.exchanges, 1);
        EXPECT_EQ(whole.exchanges, 0);
        ASSERT_GT(rows.tableBucketValues, 0);
        EXPECT_EQ(rows.reducedValues, whole.reducedValues - rows.tableBucketValues);
    }
}

TEST(RowExchange, AppliesOnlyToATableAloneInItsBucketWithoutALookup) {
    Lookup model;
    std::vector<std::pair<std::string, torch::Tensor>> named;
    for (const auto& p : model.named_parameters()) named.emplace_back(p.key(), p.value());
    {
        GradBuckets shared(named, BucketOptions{}); // one bucket for everything
        DataParallel dp(shared, std::make_shared<MirrorCommunicator>());
        EXPECT_FALSE(dp.exchangeRowsOf(*model.tok, "tok.weight"));
        EXPECT_FALSE(model.tok->lookup);
    }
    BucketOptions options;
    options.alone = {"tok.weight"};
    GradBuckets alone(named, options);
    DataParallel dp(alone, std::make_shared<MirrorCommunicator>());
    EXPECT_FALSE(dp.exchangeRowsOf(*model.tok, "no.such.weight"));
    EXPECT_TRUE(dp.exchangeRowsOf(*model.tok, "tok.weight"));
    EXPECT_FALSE(dp.exchangeRowsOf(*model.tok, "tok.weight")) << "a lookup is installed already";
    // Without autograd recording, the installed lookup is the plain one.
    torch::NoGradGuard noGrad;
    const torch::Tensor tokens = torch::tensor({3, 4});
    EXPECT_TRUE(torch::equal(model.tok->forward(tokens), torch::embedding(model.tok->weight, tokens)));
}

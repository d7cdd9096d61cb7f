// parallel.reduce_dtype: gradients cross the wire in that dtype and come back into the fp32 buckets.
// A one-process communicator that acts as two identical replicas (a sum over the group doubles
// every value) shows what went over the wire: in bf16, the doubled values of the bf16-rounded
// gradients; in fp32, the doubled gradients themselves.

#include "trainer/comm/Communicator.h"
#include "trainer/parallel/DataParallel.h"
#include "trainer/parallel/GradBuckets.h"

#include <gtest/gtest.h>

using namespace parallax;

namespace {

class Done : public Work {
public:
    void wait() override {}
    bool test() override { return true; }
};

// Rank 0 of two whose peer holds the same tensors; records the dtypes it was handed.
class MirrorCommunicator : public Communicator {
public:
    int rank() const override { return 0; }
    int size() const override { return 2; }
    std::string backend() const override { return "mirror"; }
    std::shared_ptr<Work> allReduceAsync(torch::Tensor& t, ReduceOp) override {
        types.push_back(t.scalar_type());
        t.mul_(2);
        return std::make_shared<Done>();
    }
    std::shared_ptr<Work> reduceScatterAsync(torch::Tensor& out, const torch::Tensor& in, ReduceOp) override {
        types.push_back(in.scalar_type());
        out.copy_(in.chunk(2)[0] * 2);
        return std::make_shared<Done>();
    }
    std::shared_ptr<Work> allGatherAsync(torch::Tensor& out, const torch::Tensor& in) override {
        out.copy_(torch::cat({in, in}));
        return std::make_shared<Done>();
    }
    std::shared_ptr<Work> broadcastAsync(torch::Tensor&, int) override { return std::make_shared<Done>(); }
    std::shared_ptr<Work> sendAsync(const torch::Tensor&, int, int) override { throw std::logic_error("no peers"); }
    std::shared_ptr<Work> recvAsync(torch::Tensor&, int, int) override { throw std::logic_error("no peers"); }
    void barrier() override {}
    double allReduceScalar(double value, ReduceOp) override { return 2 * value; }
    std::pair<double, int> maxLoc(double value) override { return {value, 0}; }

    std::vector<torch::ScalarType> types;
};

struct Mlp : torch::nn::Module {
    Mlp() {
        a = register_module("a", torch::nn::Linear(24, 40));
        b = register_module("b", torch::nn::Linear(40, 6));
    }
    torch::Tensor forward(const torch::Tensor& x) { return b(torch::tanh(a(x))); }
    torch::nn::Linear a{nullptr}, b{nullptr};
};

struct Reduced {
    std::vector<torch::Tensor> local;   // each bucket's gradients before the reduction
    std::vector<torch::Tensor> result;  // after: whole buckets (stage 0) or this rank's slices (stage 2)
    std::vector<torch::ScalarType> wire;
};

Reduced reduce(int stage, torch::ScalarType type) {
    torch::manual_seed(3);
    Mlp model;
    std::vector<std::pair<std::string, torch::Tensor>> named;
    for (const auto& p : model.named_parameters()) named.emplace_back(p.key(), p.value());
    BucketOptions options;
    options.bucketBytes = 1024; // several buckets
    options.padMultiple = 2;
    GradBuckets buckets(named, options);
    auto comm = std::make_shared<MirrorCommunicator>();
    DataParallel dp(buckets, comm, stage, type);
    const torch::Tensor x = torch::randn({8, 24});
    // The local gradients, taken before any reduction: a backward with the reducer inactive.
    model.forward(x).pow(2).sum().backward();
    Reduced r;
    for (const Bucket& b : buckets.buckets()) r.local.push_back(b.grads.clone());
    buckets.zeroGrads();
    dp.beginStep(1);
    model.forward(x).pow(2).sum().backward();
    dp.finishStep();
    for (size_t b = 0; b < buckets.buckets().size(); ++b)
        r.result.push_back(stage == 2 ? dp.gradShard(b).clone() : buckets.buckets()[b].grads.clone());
    r.wire = comm->types;
    return r;
}

} // namespace

TEST(ReduceType, Bf16GradientsCrossTheWireRoundedAndComeBackAsFp32) {
    for (const int stage : {0, 2}) {
        const Reduced fp32 = reduce(stage, torch::kFloat);
        const Reduced bf16 = reduce(stage, torch::kBFloat16);
        ASSERT_FALSE(bf16.wire.empty());
        for (const auto t : fp32.wire) EXPECT_EQ(t, torch::kFloat) << "stage " << stage;
        for (const auto t : bf16.wire) EXPECT_EQ(t, torch::kBFloat16) << "stage " << stage;
        bool rounded = false;
        for (size_t b = 0; b < bf16.result.size(); ++b) {
            torch::Tensor local = bf16.local[b];
            if (stage == 2) local = local.chunk(2)[0];
            ASSERT_EQ(bf16.result[b].scalar_type(), torch::kFloat);
            EXPECT_TRUE(torch::equal(fp32.result[b], local * 2)) << "stage " << stage << ", bucket " << b;
            EXPECT_TRUE(torch::equal(bf16.result[b], local.to(torch::kBFloat16).to(torch::kFloat) * 2))
                << "stage " << stage << ", bucket " << b;
            rounded = rounded || !torch::equal(bf16.result[b], fp32.result[b]);
        }
        EXPECT_TRUE(rounded) << "stage " << stage << ": bf16 on the wire should round some gradient";
    }
}

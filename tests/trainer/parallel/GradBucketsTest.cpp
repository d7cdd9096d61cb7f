#include "trainer/parallel/GradBuckets.h"

#include <gtest/gtest.h>

using namespace parallax;

namespace {

struct TwoLayer : torch::nn::Module {
    TwoLayer() {
        a = register_module("a", torch::nn::Linear(16, 32));
        b = register_module("b", torch::nn::Linear(32, 4));
    }
    torch::Tensor forward(const torch::Tensor& x) { return b(torch::relu(a(x))); }
    torch::nn::Linear a{nullptr}, b{nullptr};
};

std::vector<std::pair<std::string, torch::Tensor>> named(torch::nn::Module& m) {
    std::vector<std::pair<std::string, torch::Tensor>> out;
    for (const auto& p : m.named_parameters()) out.emplace_back(p.key(), p.value());
    return out;
}

} // namespace

TEST(GradBuckets, ParametersBecomeViewsAndGradientsLandInTheBuckets) {
    torch::manual_seed(0);
    TwoLayer model;
    auto before = model.a->weight.detach().clone();
    BucketOptions options;
    options.bucketBytes = 1e9;
    GradBuckets buckets(named(model), options);
    // Values survive the move into the bucket, and the module sees the bucket's storage.
    EXPECT_TRUE(torch::equal(model.a->weight.detach(), before));
    ASSERT_EQ(buckets.buckets().size(), 2u); // one decay, one no-decay bucket
    int64_t total = 0;
    for (const auto& b : buckets.buckets()) total += b.numel();
    EXPECT_EQ(total, 16 * 32 + 32 + 32 * 4 + 4);

    auto x = torch::randn({5, 16});
    model.forward(x).sum().backward();
    model.forward(x).sum().backward(); // accumulates in place
    // Reference gradients from an untouched copy of the model.
    TwoLayer ref;
    {
        torch::NoGradGuard g;
        ref.a->weight.copy_(model.a->weight);
        ref.a->bias.copy_(model.a->bias);
        ref.b->weight.copy_(model.b->weight);
        ref.b->bias.copy_(model.b->bias);
    }
    (ref.forward(x).sum() * 2).backward();
    for (const ParamSlot& s : buckets.slots()) {
        const auto& bucket = buckets.buckets()[static_cast<size_t>(s.bucket)];
        auto inBucket = bucket.grads.narrow(0, s.offset, s.numel);
        torch::Tensor expected;
        for (const auto& p : ref.named_parameters())
            if (p.key() == s.name) expected = p.value().grad().reshape({-1});
        ASSERT_TRUE(expected.defined()) << s.name;
        EXPECT_TRUE(torch::allclose(inBucket, expected, 1e-5, 1e-6)) << s.name;
    }
    // Updating the flat buffer updates the module.
    {
        torch::NoGradGuard g;
        for (auto& b : buckets.buckets()) b.params.fill_(0.5);
    }
    EXPECT_TRUE(torch::all(model.b->bias.eq(0.5)).item<bool>());
    buckets.zeroGrads();
    EXPECT_EQ(model.a->weight.grad().abs().sum().item<double>(), 0.0);
}

TEST(GradBuckets, CapacitySplitsAndOrderIsReverse) {
    TwoLayer model;
    BucketOptions options;
    options.bucketBytes = 600 * sizeof(float);
    GradBuckets buckets(named(model), options);
    // 512 + 128 decayed values do not fit one 600-value bucket.
    int decayBuckets = 0;
    for (const auto& b : buckets.buckets()) decayBuckets += b.decay ? 1 : 0;
    EXPECT_EQ(decayBuckets, 2);
    // The last registered matrix fills the first bucket (backward produces its gradient first).
    EXPECT_EQ(buckets.slots().front().name, "b.weight");
    for (const ParamSlot& s : buckets.slots()) EXPECT_EQ(s.decay, s.shape.size() >= 2) << s.name;
}

// A parameter of `alone` (a tied pair: TiedParameters) gets a bucket of its own, padded as the
// others, so that two of one size have the same slices on every data-parallel rank; the rest keep
// their buckets and the arrival order.
// A matrix backward never reaches takes no weight decay, as torch's AdamW skips it; the rest decay.
TEST(GradBuckets, AParameterWithoutGradientTakesNoDecay) {
    struct TwoLayer : torch::nn::Module {
        TwoLayer() {
            a = register_module("a", torch::nn::Linear(8, 8));
            b = register_module("b", torch::nn::Linear(8, 8));
        }
        torch::nn::Linear a{nullptr}, b{nullptr};
    } model;
    BucketOptions options;
    options.withoutGradient = {"b.weight"};
    GradBuckets buckets(named(model), options);
    for (const ParamSlot& s : buckets.slots()) EXPECT_EQ(s.decay, s.name == "a.weight") << s.name;
    for (const Bucket& bucket : buckets.buckets())
        for (int s : bucket.slots) EXPECT_EQ(bucket.decay, buckets.slots()[static_cast<size_t>(s)].decay);
}

TEST(GradBuckets, AParameterAloneHasABucketOfItsOwn) {
    struct ThreeLayer : torch::nn::Module {
        ThreeLayer() {
            a = register_module("a", torch::nn::Linear(8, 8));
            b = register_module("b", torch::nn::Linear(8, 8));
            c = register_module("c", torch::nn::Linear(8, 8));
        }
        torch::nn::Linear a{nullptr}, b{nullptr}, c{nullptr};
    } model;
    BucketOptions options;
    options.bucketBytes = 1e9;
    options.padMultiple = 3;
    options.alone = {"a.weight", "c.weight"};
    GradBuckets buckets(named(model), options);
    std::vector<std::vector<std::string>> held;
    for (const Bucket& bucket : buckets.buckets()) {
        held.emplace_back();
        for (int s : bucket.slots) held.back().push_back(buckets.slots()[static_cast<size_t>(s)].name);
    }
    // Reverse registration order: c.weight alone, then b.weight (its group's bucket closes at a.weight),
    // a.weight alone, and the biases together.
    const std::vector<std::vector<std::string>> expected = {
        {"c.weight"}, {"b.weight"}, {"a.weight"}, {"c.bias", "b.bias", "a.bias"}};
    EXPECT_EQ(held, expected);
    EXPECT_EQ(buckets.buckets()[0].numel(), 66); // 64 padded to a multiple of 3
    EXPECT_EQ(buckets.buckets()[2].numel(), 66);
    EXPECT_FALSE(buckets.buckets()[0].tiedCopy); // TiedParameters marks the copy's bucket
}

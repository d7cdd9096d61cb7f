#include "trainer/compat/TorchCompat.h"
#include "trainer/ops/AccumulatingLinear.h"
#include "trainer/models/Linear.h"
#include "trainer/parallel/GradBuckets.h"
#include "trainer/parallel/Zero3.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace parallax;

namespace {

// y = x * w, elementwise: the gradient of sum(y) with respect to w is x summed over rows.
struct ScaleUnit : Unit {
    explicit ScaleUnit(int64_t width) { w = register_parameter("w", torch::full({width}, 2.0)); }
    Activation forward(const Activation& in, const Batch&) override { return {in.at(0) * w}; }
    std::string kindName() const override { return "block"; }
    torch::Tensor w;
};

struct TwoUnits {
    std::shared_ptr<ScaleUnit> first = std::make_shared<ScaleUnit>(6), second = std::make_shared<ScaleUnit>(6);
    std::unique_ptr<GradBuckets> buckets;
    std::unique_ptr<Zero3> zero;
    std::vector<StageChunk> chunks{1};

    explicit TwoUnits(Zero3::StreamHooks hooks = {}) {
        BucketOptions options;
        options.perUnit = true;
        buckets = std::make_unique<GradBuckets>(
            std::vector<std::pair<std::string, torch::Tensor>>{{"units.0.w", first->w}, {"units.1.w", second->w}},
            options);
        zero = std::make_unique<Zero3>(*buckets, nullptr);
        zero->setStreamHooks(std::move(hooks));
        chunks[0].units = {first, second};
        chunks[0].indices = {0, 1};
        zero->wrapUnits(chunks);
    }

    // One step: x through the first unit, and through the second too when `both`.
    void step(const torch::Tensor& x, bool both) {
        zero->beginStep(1);
        Activation a = chunks[0].units[0]->forward({x}, Batch{});
        if (both) a = chunks[0].units[1]->forward(a, Batch{});
        a.at(0).sum().backward();
        zero->finishStep();
    }

    torch::Tensor slice(int unit) const {
        for (size_t b = 0; b < buckets->buckets().size(); ++b)
            if (buckets->buckets()[b].unit == unit) return zero->gradShard(b).narrow(0, 0, buckets->buckets()[b].used);
        return {};
    }
};

TEST(Zero3Slices, EachStepsGradientReplacesTheLastAndAnUnusedUnitsIsZero) {
    TwoUnits model;
    // Forward order: the first unit's bucket, then the second's (buckets are in reverse order).
    const std::vector<size_t> order = model.zero->forwardBucketOrder();
    ASSERT_EQ(order.size(), 2u);
    EXPECT_EQ(model.buckets->buckets()[order[0]].unit, 0);
    EXPECT_EQ(model.buckets->buckets()[order[1]].unit, 1);

    // Both units: d/dw0 sum(x * w0 * w1) = sum over rows of x * w1, d/dw1 = sum over rows of x * w0 (w = 2).
    const torch::Tensor x = torch::tensor({{1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {1.f, 1.f, 1.f, 1.f, 1.f, 1.f}});
    model.step(x, /*both=*/true);
    EXPECT_TRUE(torch::equal(model.slice(0), x.sum(0) * 2)) << model.slice(0);
    EXPECT_TRUE(torch::equal(model.slice(1), x.sum(0) * 2)) << model.slice(1);
    // The next step uses the first unit only: its gradient replaces the last one (no stale sum), and
    // the second unit's slice, which no gradient reached, is zero.
    model.step(x * 0.5, /*both=*/false);
    EXPECT_TRUE(torch::equal(model.slice(0), (x * 0.5).sum(0))) << model.slice(0);
    EXPECT_TRUE(torch::equal(model.slice(1), torch::zeros({6}))) << model.slice(1);
}

TEST(Zero3Slices, HooksComeBeforeTheirWritesAndGathers) {
    std::vector<std::string> calls;
    Zero3::StreamHooks hooks;
    hooks.beforeGather = [&](int unit) { calls.push_back("gather " + std::to_string(unit)); };
    hooks.beforeGradWrite = [&] { calls.push_back("write"); };
    hooks.afterUnitUpdated = [&](int unit) { calls.push_back("updated " + std::to_string(unit)); };
    TwoUnits model(std::move(hooks));
    const torch::Tensor x = torch::ones({2, 6});
    model.step(x, /*both=*/false);
    // Forward gathers the first unit (and prefetches the second); backward finds the first unit's
    // vector still there (vectors stay from forward to backward) and gathers nothing; its gradient is
    // the step's first write; the unused second unit's slice is zeroed without a second wait.
    EXPECT_EQ(calls, (std::vector<std::string>{"gather 0", "gather 1", "write"}));
    EXPECT_TRUE(torch::equal(model.slice(1), torch::zeros({6})));

    calls.clear();
    model.zero->prefetchNextForward(true);
    for (size_t b : model.zero->forwardBucketOrder()) model.zero->shardUpdated(b);
    // Each unit's update is marked, and the first units are gathered for the next step right after.
    EXPECT_EQ(calls, (std::vector<std::string>{"updated 0", "gather 0", "updated 1", "gather 1"}));
    EXPECT_GT(model.zero->prefetchedParameterValues(), 0);
    model.step(x, /*both=*/false);
    EXPECT_EQ(model.zero->prefetchedParameterValues(), 0);
}

struct LinearUnit;

// Identity whose backward notes, when backward reaches the unit, whether its bias and weight values
// are in memory.
struct LinearBackwardProbe : torch::autograd::Function<LinearBackwardProbe> {
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& y, LinearUnit* unit) {
        ctx->saved_data["unit"] = static_cast<int64_t>(reinterpret_cast<intptr_t>(unit));
        return y.view_as(y);
    }
    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                   torch::autograd::variable_list grads);
};

// x W^T + b through parallax::Linear; notes, at each forward, whether the weight's own fp32 values
// were there and how many weights had product copies.
struct LinearUnit : Unit {
    explicit LinearUnit(int64_t width) {
        lin = register_module("lin", std::make_shared<Linear>(width, width, /*withBias=*/true, 0.2));
        torch::NoGradGuard noGrad;
        lin->weight.normal_(0.0, 0.2);
        lin->bias.normal_(0.0, 0.2);
    }
    Activation forward(const Activation& in, const Batch&) override {
        weightValuesPresent = compat::storageAllocated(lin->weight);
        copiesSet = zero ? zero->productCopiesSet() : 0;
        return {LinearBackwardProbe::apply(lin->forward(in.at(0)), this)};
    }
    std::string kindName() const override { return "block"; }
    std::shared_ptr<Linear> lin;
    const Zero3* zero = nullptr; // the ZeRO-3 wrapping it, whose layers' copies forward counts
    bool weightValuesPresent = false;
    size_t copiesSet = 0;
    bool biasAtBackward = false, weightAtBackward = false;
};

torch::autograd::variable_list LinearBackwardProbe::backward(torch::autograd::AutogradContext* ctx,
                                                             torch::autograd::variable_list grads) {
    auto* unit = reinterpret_cast<LinearUnit*>(ctx->saved_data["unit"].toInt());
    unit->biasAtBackward = compat::storageAllocated(unit->lin->bias);
    unit->weightAtBackward = compat::storageAllocated(unit->lin->weight);
    return {grads.at(0), torch::Tensor()};
}

// Two Linear units under ZeRO-3 with their weights forward-only, as the trainer sets them under bf16
// autocast; with `copies`, gathered as bf16 product copies.
struct TwoLinearUnits {
    std::vector<std::shared_ptr<LinearUnit>> units;
    std::unique_ptr<GradBuckets> buckets;
    std::unique_ptr<Zero3> zero;
    std::vector<StageChunk> chunks{1};

    explicit TwoLinearUnits(bool copies) {
        torch::manual_seed(7);
        std::vector<std::pair<std::string, torch::Tensor>> named;
        for (int i = 0; i < 2; ++i) {
            units.push_back(std::make_shared<LinearUnit>(16));
            for (const auto& p : units.back()->named_parameters())
                named.emplace_back("units." + std::to_string(i) + "." + p.key(), p.value());
        }
        BucketOptions options;
        options.perUnit = true;
        buckets = std::make_unique<GradBuckets>(named, options);
        zero = std::make_unique<Zero3>(*buckets, nullptr);
        chunks[0].units = {units[0], units[1]};
        chunks[0].indices = {0, 1};
        zero->wrapUnits(chunks);
        zero->setForwardOnlyParameters({"units.0.lin.weight", "units.1.lin.weight"});
        for (const auto& unit : units) unit->zero = zero.get();
        if (copies)
            zero->useProductCopies(torch::kBFloat16,
                                   {{"units.0.lin.weight", units[0]->lin.get()}, {"units.1.lin.weight", units[1]->lin.get()}});
        Zero3::StreamHooks hooks;
        hooks.beforeGather = [this](int) { ++gathers; };
        zero->setStreamHooks(std::move(hooks));
    }
    int gathers = 0; // units gathered (each unit's first bucket counts once per gather)

    torch::Tensor step(const torch::Tensor& x) {
        zero->beginStep(1);
        torch::Tensor loss;
        {
            compat::AutocastScope autocast(c10::DeviceType::CPU, torch::kBFloat16, true);
            Activation a = chunks[0].units[0]->forward({x}, Batch{});
            a = chunks[0].units[1]->forward(a, Batch{});
            loss = a.at(0).to(torch::kFloat).pow(2).sum();
        }
        loss.backward();
        zero->finishStep();
        return loss.detach();
    }

    // The optimizer's part: every slice changed, then marked updated in forward order.
    void update() {
        torch::NoGradGuard noGrad;
        for (size_t b : zero->forwardBucketOrder()) {
            zero->paramShard(b).mul_(0.5).add_(zero->gradShard(b), -0.01);
            zero->shardUpdated(b);
        }
    }
};

TEST(Zero3Slices, ProductCopiesGatheredInBf16TrainLikeCastsOfTheFp32Whole) {
    TwoLinearUnits cast(/*copies=*/false), copies(/*copies=*/true);
    const torch::Tensor x = torch::randn({5, 16});
    for (int step = 0; step < 3; ++step) {
        cast.gathers = copies.gathers = 0;
        const torch::Tensor lossCast = cast.step(x), lossCopies = copies.step(x);
        // Each unit is gathered once, for its forward: backward gathers nothing.
        EXPECT_EQ(cast.gathers, 2);
        EXPECT_EQ(copies.gathers, 2);
        // Casting the gathered fp32 whole or gathering the cast slices gives the same bf16 weights, so
        // the same loss and gradients, bit for bit.
        EXPECT_TRUE(torch::equal(lossCast, lossCopies)) << "step " << step << ": " << lossCast << " vs " << lossCopies;
        for (size_t b = 0; b < cast.buckets->buckets().size(); ++b)
            EXPECT_TRUE(torch::equal(cast.zero->gradShard(b), copies.zero->gradShard(b))) << "step " << step << " bucket " << b;
        for (int u = 0; u < 2; ++u) {
            // The copies' forward never had the weights' fp32 values, only their copies (this unit's,
            // and from the second unit on the next one's, gathered ahead).
            EXPECT_TRUE(cast.units[u]->weightValuesPresent);
            EXPECT_EQ(cast.units[u]->copiesSet, 0u);
            EXPECT_FALSE(copies.units[u]->weightValuesPresent) << "unit " << u;
            EXPECT_GE(copies.units[u]->copiesSet, 1u) << "unit " << u;
            // Backward reads neither's fp32 weight (not gathered again); the bias stayed from forward.
            for (const auto* m : {&cast, &copies}) {
                EXPECT_FALSE(m->units[u]->weightAtBackward) << "unit " << u;
                EXPECT_TRUE(m->units[u]->biasAtBackward) << "unit " << u;
            }
        }
        // Copies live only while their unit's forward runs.
        EXPECT_EQ(cast.zero->productCopiesSet(), 0u);
        EXPECT_EQ(copies.zero->productCopiesSet(), 0u);
        cast.update();
        copies.update(); // the copies of the slices are cast again as each is marked updated
    }
    // Slices written without the optimizer (a checkpoint loaded) need refreshProductCopies().
    {
        torch::NoGradGuard noGrad;
        for (auto* m : {&cast, &copies})
            for (size_t b = 0; b < m->buckets->buckets().size(); ++b) m->zero->paramShard(b).fill_(0.03);
    }
    copies.zero->refreshProductCopies();
    EXPECT_TRUE(torch::equal(cast.step(x), copies.step(x)));
}

} // namespace

// ProductCopies: the Linear layers' products read copies of their weights and biases made once per
// update in the products' dtype, instead of autocast's cast of each. Under bf16 autocast (here on the
// CPU, whose autocast rounds the same way) a model trains to the same bits with the copies as
// without them, and every copy equals its parameter rounded after each update.

#include "tests/trainer/parallel/ProductCopiesSupport.h"

#include <gtest/gtest.h>

using namespace parallax;
using namespace parallax::test;

namespace {

class ProductCopiesTrain : public testing::TestWithParam<std::string> {};

TEST_P(ProductCopiesTrain, TrainToTheSameBitsAsAutocastsCastsAndFollowEveryUpdate) {
    const Trained cast = trainWithProductCopies(GetParam(), false, 3, torch::kCPU);
    const Trained copied = trainWithProductCopies(GetParam(), true, 3, torch::kCPU);
    EXPECT_GT(copied.layersWithCopies, 0u);
    EXPECT_TRUE(copied.copiesMatched);
    ASSERT_EQ(cast.losses.size(), copied.losses.size());
    for (size_t i = 0; i < cast.losses.size(); ++i) EXPECT_EQ(cast.losses[i], copied.losses[i]) << "step " << i;
    ASSERT_EQ(cast.params.size(), copied.params.size());
    for (size_t b = 0; b < cast.params.size(); ++b) EXPECT_TRUE(torch::equal(cast.params[b], copied.params[b])) << "bucket " << b;
    // The run moved: the comparison is not between two untouched models.
    EXPECT_NE(cast.losses.front(), cast.losses.back());
}

INSTANTIATE_TEST_SUITE_P(Kinds, ProductCopiesTrain,
                         testing::Values("gpt", "qwen_image", "qwen2_5_vl", "qwen2_5_vl-frozen"),
                         [](const testing::TestParamInfo<std::string>& info) {
                             std::string name = info.param;
                             for (char& c : name) c = c == '-' ? '_' : c;
                             return name;
                         });

// A frozen layer (in no bucket, never updated) gets a copy of its own, equal to its parameters
// rounded, and keeps it through the updates of the others.
TEST(ProductCopies, AFrozenTowerReadsCopiesOfItsOwnThatTheUpdatesLeaveAlone) {
    const Trained copied = trainWithProductCopies("qwen2_5_vl-frozen", true, 2, torch::kCPU);
    const Trained unfrozen = trainWithProductCopies("qwen2_5_vl", true, 2, torch::kCPU);
    EXPECT_EQ(copied.layersWithCopies, unfrozen.layersWithCopies);
    EXPECT_TRUE(copied.copiesMatched);
}

// Held in bf16 only (moveToDevice), a frozen tower's Linears need no copy: the products read the
// weights themselves, the same values as the copies, so the run computes the same bits.
TEST(ProductCopies, AFrozenTowerHeldInBf16TrainsToTheSameBitsAsOneWithCopies) {
    const Trained copied = trainWithProductCopies("qwen2_5_vl-frozen", true, 3, torch::kCPU);
    const Trained held = trainWithProductCopies("qwen2_5_vl-frozen", true, 3, torch::kCPU, /*holdFrozen=*/true);
    EXPECT_EQ(copied.heldInBf16, 0);
    EXPECT_GT(held.heldInBf16, 0);
    EXPECT_TRUE(held.heldRead);
    EXPECT_TRUE(held.copiesMatched); // the trained layers keep their copies
    EXPECT_LT(held.layersWithCopies, copied.layersWithCopies);
    EXPECT_EQ(held.losses, copied.losses);
    ASSERT_EQ(held.params.size(), copied.params.size());
    for (size_t b = 0; b < held.params.size(); ++b) EXPECT_TRUE(torch::equal(held.params[b], copied.params[b])) << b;
    EXPECT_NE(held.losses.front(), held.losses.back());
}

// Nothing frozen: nothing is held in another type.
TEST(ProductCopies, MoveToDeviceLeavesTrainedLayersInTheirType) {
    const Trained held = trainWithProductCopies("qwen2_5_vl", true, 1, torch::kCPU, /*holdFrozen=*/true);
    EXPECT_EQ(held.heldInBf16, 0);
    EXPECT_TRUE(held.copiesMatched);
}

TEST(ProductCopies, LeaveTheLayersAsTheyWereWhenDropped) {
    const ModelDims dims = dimsOf("gpt", "tiny");
    auto model = buildModel(dims, 3);
    std::vector<std::pair<std::string, torch::Tensor>> named;
    for (const auto& p : model->named_parameters()) named.emplace_back(p.key(), p.value());
    GradBuckets buckets(named, BucketOptions{});
    const std::map<std::string, Linear*> layers = linearLayers(*model);
    ASSERT_FALSE(layers.empty());
    {
        ProductCopies copies(buckets, torch::kBFloat16, layers);
        EXPECT_EQ(copies.layersSet(), layers.size());
        for (const auto& [name, layer] : layers) EXPECT_TRUE(layer->product_weight.defined()) << name;
    }
    for (const auto& [name, layer] : layers) {
        EXPECT_FALSE(layer->product_weight.defined()) << name;
        EXPECT_FALSE(layer->product_bias.defined()) << name;
    }
}

} // namespace

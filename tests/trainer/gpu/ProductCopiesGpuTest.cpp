// ProductCopies on the GPU: under bf16 autocast, with the worker's fused operations taking their GPU
// paths, a model whose products read the bf16 copies computes the same first loss, bit for bit, as
// one whose products read autocast's casts, every copy equals its parameter rounded after each
// update, and the later losses agree to the run-to-run noise of the GPU's backward (attention's
// backward may sum in another order). Skips where there is no GPU.

#include "tests/trainer/parallel/ProductCopiesSupport.h"

#include <gtest/gtest.h>

#include <cmath>

namespace {

using namespace parallax;
using namespace parallax::test;

class ProductCopiesGpu : public testing::TestWithParam<std::string> {};

TEST_P(ProductCopiesGpu, TrainToTheSameBitsAsAutocastsCasts) {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    const Trained cast = trainWithProductCopies(GetParam(), false, 3, torch::kCUDA);
    const Trained copied = trainWithProductCopies(GetParam(), true, 3, torch::kCUDA);
    EXPECT_GT(copied.layersWithCopies, 0u);
    EXPECT_TRUE(copied.copiesMatched);
    ASSERT_EQ(cast.losses.size(), copied.losses.size());
    EXPECT_EQ(cast.losses.front(), copied.losses.front());
    for (size_t i = 1; i < cast.losses.size(); ++i)
        EXPECT_NEAR(cast.losses[i], copied.losses[i], 1e-4 * std::abs(cast.losses[i])) << "step " << i;
    ASSERT_EQ(cast.params.size(), copied.params.size());
    for (size_t b = 0; b < cast.params.size(); ++b)
        EXPECT_TRUE(torch::allclose(cast.params[b], copied.params[b], 1e-4, 1e-5)) << "bucket " << b;
    EXPECT_NE(cast.losses.front(), cast.losses.back());
}

// A frozen tower held in bf16 only (moveToDevice) computes what its copies did, bit for bit.
TEST(ProductCopiesGpuFrozen, HeldInBf16TrainsToTheSameBitsAsCopies) {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    const Trained copied = trainWithProductCopies("qwen2_5_vl-frozen", true, 3, torch::kCUDA);
    const Trained held = trainWithProductCopies("qwen2_5_vl-frozen", true, 3, torch::kCUDA, /*holdFrozen=*/true);
    EXPECT_GT(held.heldInBf16, 0);
    EXPECT_TRUE(held.heldRead);
    EXPECT_EQ(held.losses.front(), copied.losses.front());
    for (size_t i = 1; i < copied.losses.size(); ++i)
        EXPECT_NEAR(held.losses[i], copied.losses[i], 1e-4 * std::abs(copied.losses[i])) << "step " << i;
}

INSTANTIATE_TEST_SUITE_P(Kinds, ProductCopiesGpu,
                         testing::Values("gpt", "qwen_image", "qwen2_5_vl", "qwen2_5_vl-frozen"),
                         [](const testing::TestParamInfo<std::string>& info) {
                             std::string name = info.param;
                             for (char& c : name) c = c == '-' ? '_' : c;
                             return name;
                         });

} // namespace

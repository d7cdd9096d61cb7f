// Aspect buckets: sides multiples of 16 within a pixel budget, never enlarged, the aspect kept;
// an image fitted to its bucket by covering it and cutting out the middle.

#include "core/captions/AspectBucket.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace parallax {
namespace {

TEST(AspectBucket, SidesAreMultiplesOf16WithinTheBudgetNearTheAspect) {
    const int64_t budget = 1024 * 1024;
    EXPECT_EQ(bucketFor(1024, 768, budget), (BucketSize{1024, 768}));
    EXPECT_EQ(bucketFor(100, 60, budget), (BucketSize{96, 48})) << "small images are not enlarged";
    EXPECT_EQ(bucketFor(4000, 3000, budget), (BucketSize{1168, 880}));
    EXPECT_EQ(bucketFor(10, 1000, budget), (BucketSize{16, 992}));
    for (const auto& [w, h] : std::vector<std::pair<int, int>>{{4032, 3024}, {1920, 1080}, {3000, 4500}, {2048, 512}, {777, 1333}}) {
        const BucketSize b = bucketFor(w, h, budget);
        EXPECT_EQ(b.width % 16, 0);
        EXPECT_EQ(b.height % 16, 0);
        EXPECT_LE(int64_t(b.width) * b.height, budget);
        EXPECT_NEAR(std::log(double(b.width) / b.height), std::log(double(w) / h), 0.05) << w << " x " << h;
    }
    EXPECT_THROW(bucketFor(0, 10, budget), std::invalid_argument);
    EXPECT_THROW(bucketFor(10, 10, 100), std::invalid_argument);
    const auto counts = bucketCounts({bucketFor(1024, 768, budget), bucketFor(1030, 770, budget), bucketFor(100, 60, budget)});
    ASSERT_EQ(counts.size(), 2u);
    EXPECT_EQ(counts.at(BucketSize{1024, 768}), 2);
}

Image ramp(int w, int h) { // pixel (x, y) = (x, y, x + y) modulo 256
    Image img;
    img.width = w;
    img.height = h;
    img.channels = 3;
    img.samples.resize(size_t(w) * h * 3);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            uint8_t* p = img.row(y) + size_t(x) * 3;
            p[0] = uint8_t(x), p[1] = uint8_t(y), p[2] = uint8_t(x + y);
        }
    return img;
}

TEST(AspectBucket, AnImageCoversItsBucketAndKeepsItsMiddle) {
    // 64 x 16 into 32 x 16: no resize (the height already fits), 16 columns cut from each side.
    const Image wide = fitToBucket(ramp(64, 16), {32, 16});
    ASSERT_EQ(wide.width, 32);
    ASSERT_EQ(wide.height, 16);
    EXPECT_EQ(wide.row(0)[0], 16);
    EXPECT_EQ(wide.row(5)[31 * 3], 47);
    EXPECT_EQ(wide.row(5)[1], 5);
    // 40 x 100 into 32 x 32: resized to 32 x 80, 24 rows cut from top and bottom.
    const Image tall = fitToBucket(ramp(40, 100), {32, 32});
    ASSERT_EQ(tall.width, 32);
    ASSERT_EQ(tall.height, 32);
    EXPECT_NEAR(tall.row(16)[16 * 3 + 1], (24 + 16 + 0.5) * 100.0 / 80.0, 2.0) << "row 16 of the crop is row 40 of 80";
}

} // namespace
} // namespace parallax

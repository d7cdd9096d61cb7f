#pragma once

#include "core/image/Image.h"

#include <cstdint>
#include <map>
#include <vector>

namespace parallax {

// The side the trained sizes are multiples of: the VAE's 8 times the transformer's 2 x 2 packing.
inline constexpr int kBucketSide = 16;

// The size, in pixels, an image is trained at: not squashed to one square but kept near its own
// aspect. Its area is brought within `maxPixels` (never enlarged), then each side rounded down to a
// multiple of 16, at least 16 (as DiffSynth-Studio's dynamic resolution sizes its images).
struct BucketSize {
    int width = 0;
    int height = 0;
    bool operator<(const BucketSize& o) const { return width != o.width ? width < o.width : height < o.height; }
    bool operator==(const BucketSize& o) const { return width == o.width && height == o.height; }
};

// std::invalid_argument for sides below 1 or maxPixels below 16 x 16.
BucketSize bucketFor(int width, int height, int64_t maxPixels);

// `image` at `size`: resized (bicubic, as PIL's) to cover it with its own aspect, then the middle
// cut out, as the trainers' crop-and-resize does.
Image fitToBucket(const Image& image, BucketSize size);

// How many samples fall in each bucket.
std::map<BucketSize, int64_t> bucketCounts(const std::vector<BucketSize>& sizes);

} // namespace parallax

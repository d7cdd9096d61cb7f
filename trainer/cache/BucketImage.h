#pragma once

#include "core/captions/AspectBucket.h"

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace parallax {

// The image at `path` as the VAE's encoder takes it: decoded (decodeImageFile), fitted to its aspect
// bucket within `maxPixels` (bucketFor, fitToBucket), (1, 3, H, W) float32 in [-1, 1]. `bucket` is
// set to the bucket. What `parallax-cli cache` encodes and what a run without the cache encodes in
// its steps, alike to the bit. Throws ImageError for an image that does not decode.
torch::Tensor bucketImageTensor(const std::string& path, int64_t maxPixels, BucketSize& bucket);

// A decoded RGB image fitted to a given bucket (an Edit sample's reference image, to the bucket of
// the image being made), (1, 3, H, W) float32 in [-1, 1].
torch::Tensor bucketImageTensor(const Image& rgb, BucketSize bucket);

} // namespace parallax

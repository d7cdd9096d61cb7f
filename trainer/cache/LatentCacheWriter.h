#pragma once

#include "core/captions/AspectBucket.h"
#include "core/spec/RunSpec.h"

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>

namespace parallax {

struct LatentCacheOptions {
    torch::Device device = torch::kCPU;
    torch::ScalarType dtype = torch::kFloat32; // the VAE's and the text encoder's
};

struct LatentCacheResult {
    std::string folder;
    int64_t samples = 0;
    int64_t resumed = 0; // samples already in the cache when it began
    int64_t encoded = 0; // samples encoded now
    std::map<BucketSize, int64_t> buckets; // of the samples encoded now
    double seconds = 0;
};

// `parallax-cli cache SPEC`: every image and prompt of spec.data.path (an image-caption dataset,
// core/captions/ImageCaptions.h) encoded once into the latent cache beside it (LatentCache.h): each
// image fitted to its aspect bucket within data.max_pixels and through the VAE's encoder, each
// prompt through Qwen-Image's text encoder (QwenImageTextEncoder), both from model.from's pipeline
// folder. Shard by shard, each written whole: a cache cut short (a kill, a full disk) goes on from
// its last complete shard when run again; a cache made for another dataset, pipeline or max_pixels
// is made again. `say` gets one line per shard (samples done, images per second). Throws
// std::invalid_argument naming the field, the file or the sample.
LatentCacheResult writeLatentCache(const RunSpec& spec, const LatentCacheOptions& options,
                                   const std::function<void(const std::string&)>& say);

} // namespace parallax

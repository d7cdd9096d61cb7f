#pragma once

#include "core/captions/ImageCaptions.h"

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// The latents of an image-caption dataset, encoded once (`parallax-cli cache SPEC`) so that a
// qwen_image run reads them and never loads the VAE or the text encoder while it trains. They are
// kept beside the dataset, in `.parallax-cache/` of its folder (a dataset file's cache is named after
// the file), as safetensors shards of kCacheShardSamples samples each, sample i named by i (nine
// digits) so that the shards read in the dataset's order; `cache.json` says what they were made from.
inline constexpr int64_t kCacheShardSamples = 32;

// What a cache was made from: the pipeline folder, the bucket budget, and the dataset itself
// (every image's path, size and modification time, every prompt): another of any of them makes the
// cache stale.
struct LatentCacheKey {
    std::string model_from;
    int64_t max_pixels = 0;
    int64_t samples = 0;
    std::string fingerprint; // 16 hex digits

    bool operator==(const LatentCacheKey& o) const {
        return model_from == o.model_from && max_pixels == o.max_pixels && samples == o.samples &&
               fingerprint == o.fingerprint;
    }
};

LatentCacheKey latentCacheKey(const std::vector<CaptionSample>& samples, const std::string& modelFrom, int64_t maxPixels);

std::string latentCacheFolder(const std::string& datasetPath);
std::string cacheShardName(int64_t shard); // "shard-00003.safetensors"
std::string cacheSampleName(int64_t index); // "000000101"
int64_t cacheShardCount(int64_t samples);

struct LatentCacheStatus {
    std::string folder;
    bool made_for_this = false; // cache.json names this key
    int64_t shards_done = 0;    // complete shards, in order from the first
    int64_t samples_done = 0;   // the samples those hold
    int64_t samples = 0;
    bool complete() const { return made_for_this && samples_done == samples; }
};

// How far the cache of `datasetPath` is for `key`: the shards present (from the first, without a gap)
// of a cache made for it; none of another's. Reads only names and cache.json.
LatentCacheStatus latentCacheStatus(const std::string& datasetPath, const LatentCacheKey& key);

// cache.json for `key` (written whole, atomically); std::runtime_error (FileError) naming the file.
void writeLatentCacheManifest(const std::string& folder, const LatentCacheKey& key);

} // namespace parallax

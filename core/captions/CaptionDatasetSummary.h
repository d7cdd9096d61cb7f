#pragma once

#include "core/captions/AspectBucket.h"
#include "core/captions/LatentCache.h"

#include <cstdint>
#include <map>
#include <string>

namespace parallax {

// What the console shows of an image-caption dataset before a run reads it through its latent
// cache: how many samples, how they fall in aspect buckets, and how much of the cache made for
// this pipeline folder and pixel budget is there.
struct CaptionDatasetSummary {
    int64_t samples = 0;
    std::map<BucketSize, int64_t> buckets;
    LatentCacheStatus cache;
    // The dataset's or an image's problem (a CaptionError names the file and line, an ImageError the
    // image); empty when the dataset reads. Nothing else is set then.
    std::string error;

    bool ok() const { return error.empty(); }
};

// Reads `datasetPath` (readImageCaptions) and every image's header (not its pixels) for its bucket
// under `maxPixels`, and the cache's status for `modelFrom`. Takes as long as reading every header:
// call it off a GUI thread. Never throws.
CaptionDatasetSummary summarizeCaptionDataset(const std::string& datasetPath, const std::string& modelFrom,
                                              int64_t maxPixels);

// "70 images in 3 buckets: 48 x 32 (24), 32 x 32 (23), 16 x 48 (23)": the buckets by count, largest
// first, then by width and height.
std::string bucketSummaryText(const CaptionDatasetSummary& summary);

} // namespace parallax

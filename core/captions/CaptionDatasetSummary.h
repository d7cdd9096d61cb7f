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
    // Qwen-Image-Edit: the samples that edit reference images (edit_image), the fewest and most
    // references one gives, and the pipeline class of the model folder that will read them.
    int64_t edit_samples = 0;
    int64_t fewest_references = 0, most_references = 0;
    std::string pipeline_class;
    LatentCacheStatus cache;
    // The dataset's or an image's problem (a CaptionError names the file and line, an ImageError the
    // image); empty when the dataset reads. Nothing else is set then.
    std::string error;

    bool ok() const { return error.empty(); }
};

// Reads `datasetPath` (readImageCaptions) and every image's header (not its pixels) for its bucket
// under `maxPixels` (reference images' headers too), and the cache's status for `modelFrom`. Samples
// with more reference images than `modelFrom`'s pipeline takes are the error requireEditPipeline
// gives. Takes as long as reading every header:
// call it off a GUI thread. Never throws.
CaptionDatasetSummary summarizeCaptionDataset(const std::string& datasetPath, const std::string& modelFrom,
                                              int64_t maxPixels);

// "70 images in 3 buckets: 48 x 32 (24), 32 x 32 (23), 16 x 48 (23)": the buckets by count, largest
// first, then by width and height; with Edit samples "; 12 edit 1 to 2 reference images
// (QwenImageEditPlusPipeline)".
std::string bucketSummaryText(const CaptionDatasetSummary& summary);

} // namespace parallax

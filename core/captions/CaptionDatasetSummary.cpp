#include "core/captions/CaptionDatasetSummary.h"

#include "core/captions/ImageCaptions.h"
#include "core/captions/QwenImagePipelines.h"
#include "core/image/ImageDecoder.h"

#include <algorithm>
#include <exception>
#include <utility>
#include <vector>

namespace parallax {

CaptionDatasetSummary summarizeCaptionDataset(const std::string& datasetPath, const std::string& modelFrom,
                                              int64_t maxPixels) {
    CaptionDatasetSummary out;
    try {
        const std::vector<CaptionSample> samples = readImageCaptions(datasetPath);
        std::vector<BucketSize> sizes;
        sizes.reserve(samples.size());
        const QwenImagePipeline pipeline = qwenImagePipelineOf(modelFrom);
        requireEditPipeline(samples, pipeline, modelFrom);
        for (const CaptionSample& s : samples) {
            try {
                const ImageInfo info = readImageInfoFile(s.image);
                sizes.push_back(bucketFor(info.width, info.height, maxPixels));
                for (const std::string& reference : s.edit_images) readImageInfoFile(reference);
            } catch (const std::exception& e) {
                // The sample's own file and line come first, so that the caption or the row can be found.
                throw CaptionError(s.source + ": " + e.what());
            }
            const int64_t n = static_cast<int64_t>(s.edit_images.size());
            if (n == 0) continue;
            out.fewest_references = out.edit_samples == 0 ? n : std::min(out.fewest_references, n);
            out.most_references = std::max(out.most_references, n);
            ++out.edit_samples;
        }
        out.samples = static_cast<int64_t>(samples.size());
        if (out.edit_samples > 0) out.pipeline_class = qwenImagePipelineClass(pipeline);
        out.buckets = bucketCounts(sizes);
        out.cache = latentCacheStatus(datasetPath, latentCacheKey(samples, modelFrom, maxPixels));
    } catch (const std::exception& e) {
        out = CaptionDatasetSummary{};
        out.error = e.what();
    }
    return out;
}

std::string bucketSummaryText(const CaptionDatasetSummary& summary) {
    std::vector<std::pair<BucketSize, int64_t>> buckets(summary.buckets.begin(), summary.buckets.end());
    std::stable_sort(buckets.begin(), buckets.end(), [](const auto& a, const auto& b) {
        if (a.second != b.second) return a.second > b.second;
        return b.first < a.first; // equal counts: the wider (then taller) first
    });
    std::string text = std::to_string(summary.samples) + (summary.samples == 1 ? " image in " : " images in ") +
                       std::to_string(buckets.size()) + (buckets.size() == 1 ? " bucket" : " buckets");
    for (size_t i = 0; i < buckets.size(); ++i)
        text += (i ? ", " : ": ") + std::to_string(buckets[i].first.width) + " x " +
                std::to_string(buckets[i].first.height) + " (" + std::to_string(buckets[i].second) + ")";
    if (summary.edit_samples > 0) {
        const bool one = summary.fewest_references == summary.most_references;
        text += "; " + std::to_string(summary.edit_samples) + " edit " +
                (one ? std::to_string(summary.most_references)
                     : std::to_string(summary.fewest_references) + " to " + std::to_string(summary.most_references)) +
                (summary.most_references == 1 ? " reference image (" : " reference images (") +
                summary.pipeline_class + ")";
    }
    return text;
}

} // namespace parallax

#include "trainer/cache/LatentCacheWriter.h"

#include "core/captions/ImageCaptions.h"
#include "core/captions/LatentCache.h"
#include "core/formats/SafetensorsFile.h"
#include "core/formats/SafetensorsWriter.h"
#include "trainer/data/LatentCacheDataset.h"
#include "core/image/ImageDecoder.h"
#include "core/image/ImageError.h"
#include "core/spec/ModelKinds.h"
#include "core/util/Files.h"
#include "trainer/cache/BucketImage.h"
#include "trainer/cache/QwenImageTextEncoder.h"
#include "trainer/models/QwenImageVaeWeights.h"

#include <chrono>
#include <cstdio>
#include <stdexcept>

namespace parallax {

namespace {

std::vector<CaptionSample> datasetOf(const RunSpec& spec) {
    const ModelKindInfo* kind = modelKindInfo(spec.model.kind);
    if (kind == nullptr || !readsLatents(*kind) || spec.model.from.empty())
        throw std::invalid_argument("parallax-cli cache encodes images for a latent model from its pipeline folder: "
                                    "set model.kind = \"qwen_image\" and model.from = the folder (vae/, text_encoder/, "
                                    "tokenizer/, transformer/)");
    if (spec.data.kind != DataKind::Latents)
        throw std::invalid_argument("parallax-cli cache reads data.kind = \"latents\" with data.path = an image-caption "
                                    "dataset (metadata.csv, .json, .jsonl, or images with .txt captions)");
    try {
        return readImageCaptions(spec.data.path);
    } catch (const CaptionError& e) {
        throw std::invalid_argument(std::string("data.path: ") + e.what());
    }
}

// The image of `s` at its bucket, (1, 3, H, W) in [-1, 1].
torch::Tensor imageTensor(const CaptionSample& s, int64_t maxPixels, BucketSize& bucket) {
    try {
        return bucketImageTensor(s.image, maxPixels, bucket);
    } catch (const ImageError& e) {
        throw std::invalid_argument(s.source + ": " + e.what());
    }
}

// Each edit_image of `s` decoded (8-bit RGB, as shown), in order.
std::vector<Image> referenceImages(const CaptionSample& s) {
    std::vector<Image> images;
    for (const std::string& path : s.edit_images) {
        try {
            images.push_back(decodeImageFile(path).rgb);
        } catch (const ImageError& e) {
            throw std::invalid_argument(s.source + ": edit_image " + path + ": " + e.what());
        }
    }
    return images;
}

// A cache made before shards kept each sample's prompt text: each shard that lacks one is written
// again, whole, with its tensors as they are and the texts of `samples` (the run's samples are
// captioned with them).
void stampPromptTexts(const std::string& folder, const std::vector<CaptionSample>& samples,
                      const std::function<void(const std::string&)>& say) {
    int64_t stamped = 0;
    for (int64_t shard = 0; shard < cacheShardCount(static_cast<int64_t>(samples.size())); ++shard) {
        const std::string path = joinPath(folder, cacheShardName(shard));
        TensorMetadata metadata;
        std::vector<TensorData> tensors;
        {
            const SafetensorsFile file(path);
            metadata = file.metadata();
            const int64_t first = shard * kCacheShardSamples;
            const int64_t last = std::min(static_cast<int64_t>(samples.size()), first + kCacheShardSamples);
            bool missing = false;
            for (int64_t i = first; i < last; ++i) {
                const std::string key = cacheSampleName(i) + kPromptText;
                bool has = false;
                for (const auto& entry : metadata) has = has || entry.first == key;
                if (!has) {
                    metadata.emplace_back(key, samples[static_cast<size_t>(i)].prompt);
                    missing = true;
                }
            }
            if (!missing) continue;
            for (const TensorInfo& t : file.tensors()) {
                const TensorView v = file.view(t);
                tensors.push_back({t.name, t.dtype, t.shape, v.data});
            }
            writeSafetensors(path, tensors, metadata); // through a temporary file, renamed over the mapped one
        }
        ++stamped;
    }
    if (stamped)
        say(folder + ": the prompts' texts added to " + std::to_string(stamped) + " shard" + (stamped > 1 ? "s" : "") +
            " made before shards kept them");
}

void clearStale(const std::string& folder, const std::function<void(const std::string&)>& say) {
    if (!isDirectory(folder)) return;
    int64_t removed = 0;
    for (const std::string& name : listDirectory(folder))
        if (name.rfind("shard-", 0) == 0 || name == "cache.json") {
            removeAll(joinPath(folder, name));
            ++removed;
        }
    if (removed) say(folder + " was made for another dataset, pipeline or data.max_pixels: making it again");
}

} // namespace

LatentCacheResult writeLatentCache(const RunSpec& spec, const LatentCacheOptions& options,
                                   const std::function<void(const std::string&)>& say) {
    const auto start = std::chrono::steady_clock::now();
    const std::vector<CaptionSample> samples = datasetOf(spec);
    requireEditPipeline(samples, spec.model.from);
    const LatentCacheKey key = latentCacheKey(samples, spec.model.from, spec.data.max_pixels);
    LatentCacheStatus status = latentCacheStatus(spec.data.path, key);
    LatentCacheResult result;
    result.folder = status.folder;
    result.samples = key.samples;
    if (!status.made_for_this) {
        clearStale(status.folder, say);
        writeLatentCacheManifest(status.folder, key);
        status = latentCacheStatus(spec.data.path, key);
    }
    result.resumed = status.samples_done;
    if (status.complete()) {
        say(status.folder + ": all " + std::to_string(key.samples) + " samples are encoded already");
        stampPromptTexts(status.folder, samples, say);
        return result;
    }
    if (status.samples_done)
        say("going on from sample " + std::to_string(status.samples_done) + " of " + std::to_string(key.samples));
    say("loading the VAE's encoder and the text encoder of " + spec.model.from);
    QwenImageVaeOptions vaeOptions;
    vaeOptions.decoder = false;
    vaeOptions.device = options.device;
    vaeOptions.dtype = options.dtype;
    const std::shared_ptr<QwenImageVae> vae = loadQwenImageVae(spec.model.from, vaeOptions);
    const QwenImageTextEncoder text(spec.model.from, options.device, options.dtype);
    const auto encodeStart = std::chrono::steady_clock::now();
    for (int64_t shard = status.shards_done; shard < cacheShardCount(key.samples); ++shard) {
        std::vector<torch::Tensor> keep;
        std::vector<TensorData> tensors;
        TensorMetadata metadata = {{"source", spec.data.path}};
        const int64_t first = shard * kCacheShardSamples, last = std::min(key.samples, first + kCacheShardSamples);
        for (int64_t i = first; i < last; ++i) {
            const CaptionSample& s = samples[static_cast<size_t>(i)];
            BucketSize bucket;
            const torch::Tensor image = imageTensor(s, spec.data.max_pixels, bucket).to(options.device);
            const std::string name = cacheSampleName(i);
            auto add = [&](const std::string& tensor, torch::Tensor value) {
                keep.push_back(value.to(torch::kCPU, torch::kFloat32).contiguous());
                tensors.push_back({name + tensor, Dtype::F32, keep.back().sizes().vec(), keep.back().data_ptr()});
            };
            add(".latents", vae->encode(image).squeeze(0));
            const std::vector<Image> references = referenceImages(s);
            for (size_t k = 0; k < references.size(); ++k)
                add(".reference." + std::to_string(k),
                    vae->encode(bucketImageTensor(references[k], bucket).to(options.device)).squeeze(0));
            add(".prompt_embeds", text.pipeline() == QwenImagePipeline::TextToImage ? text.encode(s.prompt)
                                                                                     : text.encodeEdit(s.prompt, references));
            metadata.emplace_back(name + kPromptText, s.prompt); // what the run's samples are captioned with
            ++result.buckets[bucket];
        }
        writeSafetensors(joinPath(status.folder, cacheShardName(shard)), tensors, metadata);
        result.encoded += last - first;
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - encodeStart).count();
        char rate[64];
        std::snprintf(rate, sizeof rate, " (%.2f images/s)", seconds > 0 ? result.encoded / seconds : 0.0);
        say("cache: " + std::to_string(last) + " of " + std::to_string(key.samples) + " samples" + rate);
    }
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

} // namespace parallax

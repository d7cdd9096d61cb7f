#include "trainer/data/LatentData.h"

#include "trainer/data/DataError.h"
#include "trainer/data/LatentCacheDataset.h"

#if PARALLAX_WITH_CAPTIONS
#include "core/captions/ImageCaptions.h"
#include "core/captions/LatentCache.h"
#endif
#if PARALLAX_WITH_IN_STEP_ENCODING
#include "trainer/data/CaptionPixelDataset.h"
#endif

namespace parallax {

std::unique_ptr<Dataset> openLatentData(const DataSpec& data, const ModelDims& dims, uint64_t seed,
                                        const std::string& modelFolder, bool verify) {
    if (LatentCacheDataset::holdsShards(data.path)) return std::make_unique<LatentCacheDataset>(data.path, dims, seed);
#if PARALLAX_WITH_CAPTIONS
    if (!verify) return std::make_unique<LatentCacheDataset>(latentCacheFolder(data.path), dims, seed);
    std::vector<CaptionSample> samples;
    try {
        samples = readImageCaptions(data.path);
    } catch (const CaptionError& e) {
        throw DataError(std::string("data.path: ") + e.what() +
                        " (data.kind = \"latents\" reads latent shards, or an image-caption dataset through its cache)");
    }
    if (modelFolder.empty())
        throw DataError("data.path = \"" + data.path + "\" is an image-caption dataset: its latents come from the VAE "
                        "and text encoder of model.from's pipeline folder; set model.from");
    const LatentCacheStatus status =
        latentCacheStatus(data.path, latentCacheKey(samples, modelFolder, data.max_pixels));
    if (status.complete()) {
        auto cached = std::make_unique<LatentCacheDataset>(status.folder, dims, seed);
        std::vector<std::string> prompts; // for a cache made before its shards kept them
        for (const CaptionSample& s : samples) prompts.push_back(s.prompt);
        cached->fillPromptTexts(prompts);
        return cached;
    }
    const std::string held = std::to_string(status.made_for_this ? status.samples_done : 0) + " of " +
                             std::to_string(status.samples) + " samples";
#if PARALLAX_WITH_IN_STEP_ENCODING
    return std::make_unique<CaptionPixelDataset>(
        std::move(samples), data, dims, seed, modelFolder,
        "data.path has no complete latent cache (" + held + "): the VAE and the text encoder run inside every step; "
        "`parallax-cli cache SPEC` once makes every step faster");
#else
    throw DataError("data.path = \"" + data.path + "\": its latent cache holds " + held +
                    (status.made_for_this ? "" : " made for this model.from and data.max_pixels") +
                    ", and this worker was built without the tokenizer that encodes prompts in the step "
                    "(packaging/deps.sh); run `parallax-cli cache SPEC` first (it goes on where it stopped)");
#endif
#else
    throw DataError("data.path = \"" + data.path + "\" holds no latent shards (*.safetensors), and this worker was "
                    "built without the image decoders that read image-caption datasets (packaging/deps.sh)");
#endif
}

} // namespace parallax

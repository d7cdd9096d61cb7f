#pragma once

#include "core/captions/AspectBucket.h"
#include "core/captions/ImageCaptions.h"
#include "core/image/QwenImageRows.h"
#include "trainer/data/Dataset.h"

#include <memory>
#include <string>
#include <vector>

namespace parallax {

class QwenImagePrompt;
struct ConditionRows;

// data.kind = "latents" on an image-caption dataset (core/captions/ImageCaptions.h) without its
// complete latent cache: the batches hold what `parallax-cli cache` would have encoded, not yet
// encoded, and the step's encoder (makeStepEncoder: the pipeline folder's VAE and text encoder,
// frozen) makes of them exactly the batch the cache would have given (latentBatch). makeBatch gives
// per sample the image fitted to its aspect bucket in [-1, 1] (Batch::pixels), an Edit sample's
// reference images fitted to the same bucket (Batch::reference_pixels) and cut into the text
// encoder's patch rows (Batch::pixel_values, image_grid), its prompt's text-encoder ids (Batch::tokens,
// -1 past each prompt's end; an Edit prompt's image pads expanded), the attention mask of the prompt
// states to come (cut at model.seq_len, padded to the longest), and the noise and sigma of the
// latents to come (drawLatentNoise: channels x H/8 x W/8 from the bucket). Opening reads the captions
// and every image's header (its bucket); the pixels are decoded when batched.
class CaptionPixelDataset : public Dataset {
public:
    // `samples` as readImageCaptions gave them for data.path; `pipelineFolder` is model.from;
    // `note` the line stepEncodingNote() gives. DataError for a sample with more edit images than the
    // folder's pipeline takes, or an image whose header does not read.
    CaptionPixelDataset(std::vector<CaptionSample> samples, const DataSpec& data, const ModelDims& dims, uint64_t seed,
                        const std::string& pipelineFolder, std::string note);
    ~CaptionPixelDataset() override;

    int64_t size() const override { return static_cast<int64_t>(m_samples.size()); }
    Batch makeBatch(const std::vector<int64_t>& indices, int64_t step) const override;
    std::string describe() const override;
    // The latents' size (H/8, W/8) of each bucket, one id each, as the cache's dataset gives them.
    std::vector<int64_t> sampleGroups() const override;
    std::string promptText(int64_t index) const override;
    std::string stepEncodingNote() const override { return m_note; }
    std::unique_ptr<BatchEncoder> makeStepEncoder(torch::Device device, torch::ScalarType dtype) const override;

private:
    // Decodes the edit images of `s`: each fitted to `bucket` into references[k], its condition rows
    // into `rows`; the pads each takes among the prompt's tokens.
    std::vector<int64_t> addReferences(const CaptionSample& s, const BucketSize& bucket,
                                       std::vector<std::vector<torch::Tensor>>& references, ConditionRows& rows) const;

    std::vector<CaptionSample> m_samples;
    std::vector<BucketSize> m_buckets; // per sample, from its header
    std::string m_path;
    int64_t m_maxPixels;
    ModelDims m_dims;
    uint64_t m_seed;
    std::string m_pipeline;
    std::string m_note;
    std::unique_ptr<QwenImagePrompt> m_prompt;
    QwenImageRule m_editRule; // the text encoder's processor rule, where a sample has edit images
};

} // namespace parallax

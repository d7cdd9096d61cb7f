#include "trainer/data/CaptionPixelDataset.h"

#include "core/image/ImageDecoder.h"
#include "core/image/ImageError.h"
#include "trainer/cache/BucketImage.h"
#include "trainer/cache/InStepEncoder.h"
#include "trainer/cache/QwenImagePrompt.h"
#include "trainer/cache/QwenImageTextEncoder.h"
#include "trainer/data/DataError.h"
#include "trainer/data/DatasetUtils.h"
#include "trainer/data/LatentBatch.h"

#include <algorithm>
#include <set>

namespace parallax {

namespace {

// The VAE's spatial ratio: a bucket of H x W pixels gives latents of H/8 x W/8.
constexpr int kLatentRatio = 8;

std::string sizeText(const BucketSize& b) { return std::to_string(b.width) + " x " + std::to_string(b.height); }

} // namespace

CaptionPixelDataset::CaptionPixelDataset(std::vector<CaptionSample> samples, const DataSpec& data,
                                         const ModelDims& dims, uint64_t seed, const std::string& pipelineFolder,
                                         std::string note)
    : m_samples(std::move(samples)), m_path(data.path), m_maxPixels(data.max_pixels), m_dims(dims), m_seed(seed),
      m_pipeline(pipelineFolder), m_note(std::move(note)) {
    try {
        requireEditPipeline(m_samples, pipelineFolder);
        for (const CaptionSample& s : m_samples)
            if (!s.edit_images.empty()) {
                m_editRule = textEncoderImageRule(pipelineFolder);
                break;
            }
    } catch (const std::invalid_argument& e) {
        throw DataError(e.what());
    }
    m_buckets.reserve(m_samples.size());
    for (const CaptionSample& s : m_samples) {
        try {
            const ImageInfo info = readImageInfoFile(s.image);
            m_buckets.push_back(bucketFor(info.width, info.height, m_maxPixels));
        } catch (const ImageError& e) {
            throw DataError(s.source + ": " + e.what());
        }
    }
    m_prompt = qwenImagePromptOf(pipelineFolder);
}

CaptionPixelDataset::~CaptionPixelDataset() = default;

Batch CaptionPixelDataset::makeBatch(const std::vector<int64_t>& indices, int64_t step) const {
    requireIndices(indices, size(), "image-caption dataset");
    const int64_t b = static_cast<int64_t>(indices.size());
    const int64_t drop = m_prompt->format().drop;
    const BucketSize bucket = m_buckets[static_cast<size_t>(indices.front())];
    std::vector<torch::Tensor> images;
    std::vector<std::vector<torch::Tensor>> references; // [reference][sample]
    ConditionRows rows;
    std::vector<std::vector<int32_t>> ids;
    int64_t longest = 1, widest = 1;
    for (int64_t index : indices) {
        const CaptionSample& s = m_samples[static_cast<size_t>(index)];
        BucketSize fitted;
        try {
            images.push_back(bucketImageTensor(s.image, m_maxPixels, fitted).squeeze(0));
        } catch (const ImageError& e) {
            throw DataError(s.source + ": " + e.what());
        }
        if (!(fitted == m_buckets[static_cast<size_t>(index)]))
            throw DataError(s.source + ": " + s.image + " now fits the bucket " + sizeText(fitted) + ", not the " +
                            sizeText(m_buckets[static_cast<size_t>(index)]) + " its header gave when the run began; "
                            "it changed during the run");
        if (!(fitted == bucket))
            throw DataError("sample " + std::to_string(index) + " is of the bucket " + sizeText(fitted) + " and sample " +
                            std::to_string(indices.front()) + " of " + sizeText(bucket) +
                            " in one micro-batch; a micro-batch holds one latent size");
        if (s.edit_images.size() != m_samples[static_cast<size_t>(indices.front())].edit_images.size())
            throw DataError("sample " + std::to_string(index) + " has " + std::to_string(s.edit_images.size()) +
                            " edit images and sample " + std::to_string(indices.front()) + " another number in one "
                            "micro-batch; a micro-batch holds one number of reference images");
        references.resize(s.edit_images.size());
        const std::vector<int64_t> pads = addReferences(s, bucket, references, rows);
        ids.push_back(m_prompt->ids(s.prompt, pads));
        const int64_t states = static_cast<int64_t>(ids.back().size()) - drop;
        if (states < 1)
            throw DataError(s.source + ": its prompt leaves no text-encoder states past Qwen-Image's template");
        longest = std::max(longest, std::min(states, m_dims.seq_len));
        widest = std::max(widest, static_cast<int64_t>(ids.back().size()));
    }
    Batch batch;
    batch.sample_index = indices;
    batch.pixels = torch::stack(images); // (B, 3, H, W)
    for (const std::vector<torch::Tensor>& reference : references) batch.reference_pixels.push_back(torch::stack(reference));
    if (rows.patchRows > 0) {
        batch.pixel_values = rows.pixelValues();
        batch.image_grid = rows.imageGrid();
    }
    batch.tokens = torch::full({b, widest}, -1, torch::kInt64);
    batch.attention_mask = torch::zeros({b, longest}, torch::kBool);
    for (int64_t i = 0; i < b; ++i) {
        const std::vector<int32_t>& row = ids[static_cast<size_t>(i)];
        const int64_t n = static_cast<int64_t>(row.size());
        batch.tokens[i].narrow(0, 0, n).copy_(torch::tensor(std::vector<int64_t>(row.begin(), row.end()), torch::kInt64));
        batch.attention_mask[i].narrow(0, 0, std::min(n - drop, longest)).fill_(true);
    }
    drawLatentNoise(batch, {m_dims.channels, bucket.height / kLatentRatio, bucket.width / kLatentRatio}, indices, step,
                    m_seed);
    return batch;
}

std::vector<int64_t> CaptionPixelDataset::sampleGroups() const {
    std::vector<int64_t> groups;
    groups.reserve(m_buckets.size());
    for (size_t i = 0; i < m_buckets.size(); ++i) {
        const int64_t h = m_buckets[i].height / kLatentRatio, w = m_buckets[i].width / kLatentRatio;
        // Each reference image is fitted to its sample's bucket: latents of the same size.
        groups.push_back(latentSampleGroup(h, w, std::vector<std::pair<int64_t, int64_t>>(m_samples[i].edit_images.size(), {h, w})));
    }
    return groups;
}

std::vector<int64_t> CaptionPixelDataset::addReferences(const CaptionSample& s, const BucketSize& bucket,
                                                         std::vector<std::vector<torch::Tensor>>& references,
                                                         ConditionRows& rows) const {
    std::vector<int64_t> pads;
    for (size_t k = 0; k < s.edit_images.size(); ++k) {
        Image rgb;
        try {
            rgb = decodeImageFile(s.edit_images[k]).rgb;
        } catch (const ImageError& e) {
            throw DataError(s.source + ": edit_image " + s.edit_images[k] + ": " + e.what());
        }
        references[k].push_back(bucketImageTensor(rgb, bucket).squeeze(0));
        pads.push_back(rows.add(editConditionRows(rgb, m_prompt->format(), m_editRule), m_editRule.merge));
    }
    return pads;
}

std::string CaptionPixelDataset::promptText(int64_t index) const {
    return index >= 0 && index < size() ? m_samples[static_cast<size_t>(index)].prompt : std::string();
}

std::string CaptionPixelDataset::describe() const {
    const size_t buckets = std::set<BucketSize>(m_buckets.begin(), m_buckets.end()).size();
    return "image captions: " + std::to_string(m_samples.size()) + " samples in " + std::to_string(buckets) +
           " buckets of " + m_path + ", encoded in every step (no complete latent cache)";
}

std::unique_ptr<BatchEncoder> CaptionPixelDataset::makeStepEncoder(torch::Device device, torch::ScalarType dtype) const {
    return std::make_unique<InStepEncoder>(m_pipeline, m_dims, device, dtype);
}

} // namespace parallax

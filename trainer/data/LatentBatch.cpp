#include "trainer/data/LatentBatch.h"

#include "core/formats/SafetensorsHeader.h"
#include "core/spec/QwenImageModels.h"
#include "trainer/compat/TorchCompat.h"
#include "trainer/data/DataError.h"
#include "trainer/data/DatasetUtils.h"

#include <algorithm>
#include <cmath>

namespace parallax {

namespace {

// Separates the latent noise stream from any other per-sample stream of the same (seed, index).
constexpr uint64_t kLatentNoiseStream = 0x6c6e6f69ULL;

std::string referencesText(const std::vector<torch::Tensor>& references) {
    if (references.empty()) return "no reference image";
    std::string text = std::to_string(references.size()) + " reference image" + (references.size() > 1 ? "s" : "") + " of";
    for (const torch::Tensor& r : references) text += " " + shapeText(r.sizes().vec());
    return text;
}

} // namespace

Batch latentBatch(const std::vector<LatentSample>& samples, const std::vector<int64_t>& indices, int64_t step,
                  uint64_t seed, const ModelDims& dims) {
    const int64_t b = static_cast<int64_t>(samples.size());
    const torch::Tensor& first = samples.front().latents;
    int64_t longest = 1;
    for (int64_t i = 0; i < b; ++i) {
        const LatentSample& s = samples[static_cast<size_t>(i)];
        if (!s.latents.sizes().equals(first.sizes()))
            throw DataError("sample " + std::to_string(indices[static_cast<size_t>(i)]) + " has latents of " +
                            shapeText(s.latents.sizes().vec()) + " and sample " + std::to_string(indices.front()) + " of " +
                            shapeText(first.sizes().vec()) + " in one micro-batch; a micro-batch holds one latent size");
        if (s.prompt.dim() != 2 || s.prompt.size(0) < 1 || s.prompt.size(1) != dims.text_dim)
            throw DataError("sample " + std::to_string(indices[static_cast<size_t>(i)]) + " has prompt states of " +
                            shapeText(s.prompt.sizes().vec()) + "; expected (tokens >= 1) x model.text_dim = " +
                            std::to_string(dims.text_dim));
        longest = std::max(longest, std::min(s.prompt.size(0), dims.seq_len));
        bool sameReferences = s.references.size() == samples.front().references.size();
        for (size_t k = 0; sameReferences && k < s.references.size(); ++k)
            sameReferences = s.references[k].sizes().equals(samples.front().references[k].sizes());
        if (!sameReferences)
            throw DataError("sample " + std::to_string(indices[static_cast<size_t>(i)]) + " has " +
                            referencesText(s.references) + " and sample " + std::to_string(indices.front()) + " " +
                            referencesText(samples.front().references) +
                            " in one micro-batch; a micro-batch holds one set of reference image sizes");
    }
    Batch batch;
    batch.sample_index = indices;
    std::vector<torch::Tensor> latents;
    for (const LatentSample& s : samples) latents.push_back(s.latents.to(torch::kFloat32));
    batch.images = torch::stack(latents); // (B, c, H, W)
    for (size_t k = 0; k < samples.front().references.size(); ++k) {
        std::vector<torch::Tensor> each;
        for (const LatentSample& s : samples) each.push_back(s.references[k].to(torch::kFloat32));
        batch.reference_latents.push_back(torch::stack(each)); // (B, c, h, w)
    }
    batch.text_states = torch::zeros({b, longest, dims.text_dim}, torch::kFloat32);
    batch.attention_mask = torch::zeros({b, longest}, torch::kBool);
    for (int64_t i = 0; i < b; ++i) {
        const torch::Tensor& prompt = samples[static_cast<size_t>(i)].prompt;
        const int64_t n = std::min(prompt.size(0), longest);
        batch.text_states[i].narrow(0, 0, n).copy_(prompt.narrow(0, 0, n));
        batch.attention_mask[i].narrow(0, 0, n).fill_(true);
    }
    withoutFullMask(batch, batch.attention_mask);
    drawLatentNoise(batch, first.sizes().vec(), indices, step, seed);
    return batch;
}

int64_t latentSampleGroup(int64_t height, int64_t width, const std::vector<std::pair<int64_t, int64_t>>& references) {
    uint64_t id = static_cast<uint64_t>(height) * (uint64_t(1) << 32) + static_cast<uint64_t>(width);
    for (const auto& [h, w] : references) id = id * 1000003ULL + (static_cast<uint64_t>(h) << 20) + static_cast<uint64_t>(w);
    return static_cast<int64_t>(id);
}

void drawLatentNoise(Batch& batch, const std::vector<int64_t>& latentShape, const std::vector<int64_t>& indices,
                     int64_t step, uint64_t seed) {
    const int64_t b = static_cast<int64_t>(indices.size());
    const double mu = qwenImageShiftMu(latentShape.at(1) / 2 * (latentShape.at(2) / 2));
    std::vector<int64_t> noiseShape = {b};
    noiseShape.insert(noiseShape.end(), latentShape.begin(), latentShape.end());
    batch.timesteps = torch::empty({b}, torch::kFloat32);
    batch.noise = torch::empty(noiseShape, torch::kFloat32);
    for (int64_t i = 0; i < b; ++i) {
        const uint64_t index = static_cast<uint64_t>(indices[static_cast<size_t>(i)]);
        torch::Generator gen = compat::makeGenerator(hashValues({kLatentNoiseStream, seed, static_cast<uint64_t>(step), index}));
        const double u = torch::sigmoid(torch::randn({1}, gen, torch::kFloat64)).item<double>();
        batch.timesteps[i] = std::exp(mu) / (std::exp(mu) + (1.0 / u - 1.0));
        batch.noise[i].copy_(torch::randn(latentShape, gen, torch::kFloat32));
    }
}

} // namespace parallax

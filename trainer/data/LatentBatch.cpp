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
    }
    Batch batch;
    batch.sample_index = indices;
    std::vector<torch::Tensor> latents;
    for (const LatentSample& s : samples) latents.push_back(s.latents.to(torch::kFloat32));
    batch.images = torch::stack(latents); // (B, c, H, W)
    batch.text_states = torch::zeros({b, longest, dims.text_dim}, torch::kFloat32);
    batch.attention_mask = torch::zeros({b, longest}, torch::kBool);
    for (int64_t i = 0; i < b; ++i) {
        const torch::Tensor& prompt = samples[static_cast<size_t>(i)].prompt;
        const int64_t n = std::min(prompt.size(0), longest);
        batch.text_states[i].narrow(0, 0, n).copy_(prompt.narrow(0, 0, n));
        batch.attention_mask[i].narrow(0, 0, n).fill_(true);
    }
    drawLatentNoise(batch, first.sizes().vec(), indices, step, seed);
    return batch;
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

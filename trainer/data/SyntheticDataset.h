#pragma once

#include "trainer/data/Dataset.h"

namespace parallax {

// Generated samples with structure a model can learn, derived from (seed, index) alone.
// gpt: sequences x[i+1] = (a x[i] + b) mod V with a per-sample multiplier a in {1, 3, 5, 7}, offset
// b in 1..16 and start x[0]. qwen_image_vae: images of one of ten shapes (blobs and bars at
// class-given places, jittered, with pixel noise), in [-1, 1]. qwen_image: the same shapes as
// latents, with prompt states drawn per class (and a little per sample).
class SyntheticDataset : public Dataset {
public:
    static constexpr int64_t kSamples = 65536;
    static constexpr int64_t kClasses = 10;

    SyntheticDataset(const ModelDims& dims, uint64_t seed);

    int64_t size() const override { return kSamples; }
    Batch makeBatch(const std::vector<int64_t>& indices, int64_t step) const override;
    std::string describe() const override;

    // Image kinds: the class of a sample and its shape's name.
    int64_t label(int64_t index) const;
    static const std::vector<std::string>& classNames();

private:
    torch::Tensor sequence(int64_t index) const; // (T+1) int64
    torch::Tensor image(int64_t index) const;    // (channels, S, S) float
    torch::Tensor prompt(int64_t index) const;   // latent kinds: (tokens, text_dim) float

    ModelDims m_dims;
    uint64_t m_seed;
};

} // namespace parallax

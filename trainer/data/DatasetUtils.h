#pragma once

// Pieces every dataset shares: seeding, image fitting and batch assembly.

#include "core/spec/ModelDims.h"
#include "core/util/Files.h"
#include "trainer/models/Model.h"

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// A well-mixed 64-bit hash of a sequence of values (splitmix64 chained); seeds per-sample draws.
uint64_t hashValues(std::initializer_list<uint64_t> values);

// (c, h, w) float image, already normalized -> (channels, S, S): bilinear resize, then channels
// repeated (grey -> colour) or averaged (colour -> grey).
torch::Tensor fitImage(const torch::Tensor& image, int64_t channels, int64_t size);

// Images as the kind that reads them (qwen_image_vae) takes them, from values in [0, 1] (pixels
// over their maximum): in [-1, 1].
torch::Tensor imageValues(const torch::Tensor& unit);

// A batch of images (each (channels, S, S)) for qwen_image_vae: images (B, ch, S, S) and the noise
// of each image's posterior draw, of the latents' shape (B, z_dim, S / 8, S / 8), drawn per sample
// from a generator seeded by hash(seed, step, sample index).
Batch imageBatch(const std::vector<torch::Tensor>& images, const std::vector<int64_t>& indices, int64_t step,
                 uint64_t seed, const ModelDims& dims);

// Elements the loss of this batch is averaged over (tokens with a label, or image values);
// summed over the global batch it normalizes the loss identically under every layout.
int64_t lossElements(const ModelDims& dims, const Batch& batch);
// The positions a batch fills, which the throughput counts: a conversations batch's attention mask
// (text and visual tokens, padding left out); a latent batch's packed image tokens (H/2 x W/2 of
// each sample's latents, of its aspect bucket) and its prompts' states (padding left out). 0 for
// the other objectives, whose samples all count ModelDims::tokensPerSample().
int64_t filledPositions(const ModelDims& dims, const Batch& batch);

// Leaves batch.attention_mask out where it pads nothing (every sample fills the micro-batch's
// width): attention then takes no mask (a causal flag for a language model), as transformers and
// diffusers do for unpadded input, and a GPU may run its flash kernels, which take no mask.
// `hostMask` is the mask on the CPU, where reading it costs no wait for a device. Inline: the
// step's encoder (trainer/cache) calls it too.
inline void withoutFullMask(Batch& batch, const torch::Tensor& hostMask) {
    if (hostMask.defined() && hostMask.all().item<bool>()) batch.attention_mask = torch::Tensor();
}

// A latent batch's sequence per sample: the prompt states the model computes (the micro-batch's
// padded width) and the packed image tokens (the image being made, then each reference image; from
// the pixels or noise of a batch still to be encoded). {0, 0} for a batch of another objective.
struct LatentSequence {
    int64_t text = 0;
    int64_t image = 0;
};
LatentSequence latentSequence(const ModelDims& dims, const Batch& batch);
// Whether the kind's samples vary in length (conversations, latents of aspect buckets), so that the
// throughput counts filledPositions rather than ModelDims::tokensPerSample().
bool countsFilledPositions(const ModelDims& dims);

// Throws DataError unless the model trains on images (qwen_image_vae).
void requireImageModel(const ModelDims& dims, const std::string& dataKind);
// Throws DataError unless the model reads text (data.kind = "text" trains a language model).
void requireTextModel(const ModelDims& dims);
// Throws DataError unless the vocabulary covers the 256 byte tokens.
void requireByteVocab(const ModelDims& dims, const std::string& dataKind);
// Throws DataError when an index is outside [0, size).
void requireIndices(const std::vector<int64_t>& indices, int64_t size, const std::string& what);

// A batch of next-token windows over one token stream: sample i is stream[i*T .. i*T+T], so
// consecutive samples share one token. tokens (B, T+1) int64.
template <class Token>
Batch streamWindows(const std::vector<Token>& stream, int64_t seqLen, const std::vector<int64_t>& indices) {
    Batch batch;
    batch.sample_index = indices;
    batch.tokens = torch::empty({static_cast<int64_t>(indices.size()), seqLen + 1}, torch::kInt64); // (B, T+1)
    int64_t* out = batch.tokens.data_ptr<int64_t>();
    for (int64_t i : indices) {
        const Token* window = stream.data() + i * seqLen;
        for (int64_t j = 0; j <= seqLen; ++j) *out++ = window[j];
    }
    return batch;
}

} // namespace parallax

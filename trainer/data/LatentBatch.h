#pragma once

#include "core/spec/ModelDims.h"
#include "trainer/models/Model.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace parallax {

// One sample of a latent model (qwen_image): the VAE's normalized latents and the text encoder's
// states of its prompt.
struct LatentSample {
    torch::Tensor latents; // (channels, H, W), H and W even
    torch::Tensor prompt;  // (tokens, text_dim), at least one token
    std::vector<torch::Tensor> references; // Edit: each reference image's latents (channels, h, w)
};

// The micro-batch of `samples` for flow matching: latents (all of one shape: a micro-batch is one
// aspect bucket), their prompts padded to the longest with a mask, none where no prompt is padded
// (withoutFullMask, DatasetUtils.h; a prompt longer than
// model.seq_len keeps its first seq_len states, as the pipelines' max_sequence_length does), and per
// sample noise and sigma drawn from (seed, step, global index) alone: sigma = the scheduler's shift
// (core/spec/QwenImageModels.h) of a logit-normal u; an Edit micro-batch's reference latents stacked
// per reference (Batch::reference_latents). Throws DataError naming the samples when shapes or the
// number of reference images disagree.
Batch latentBatch(const std::vector<LatentSample>& samples, const std::vector<int64_t>& indices, int64_t step,
                  uint64_t seed, const ModelDims& dims);

// The id of a latent sample's group (Dataset::sampleGroups: a micro-batch holds one): its latents'
// H x W and its reference images' h x w, in order. The same sizes give the same id whatever
// dataset computes it (a cache and the images it was made from).
int64_t latentSampleGroup(int64_t height, int64_t width, const std::vector<std::pair<int64_t, int64_t>>& references);

// The flow-matching draws of latentBatch alone, for samples whose latents are still to be made (an
// image-caption dataset encoded in the step): batch.noise (B, channels, H, W) for latents of
// `latentShape` (channels, H, W) and batch.timesteps (B), per sample from (seed, step, indices[i]),
// the shift's mu from the latents' grid. The same numbers latentBatch gives for the same latents' shape.
void drawLatentNoise(Batch& batch, const std::vector<int64_t>& latentShape, const std::vector<int64_t>& indices,
                     int64_t step, uint64_t seed);

} // namespace parallax

#pragma once

#include "core/captions/LatentCache.h"
#include "core/spec/RunSpec.h"

#include <cstdint>
#include <optional>
#include <string>

namespace parallax {

// The frozen encoders every rank of a qwen_image run loads when its image-caption dataset has no
// complete latent cache and the steps encode (docs/spec.md, data.kind = "latents"): model.from's
// text encoder (every tensor of text_encoder/) and the VAE's encoder (vae/'s encoder.* and
// quant_conv.* tensors), counted from their safetensors headers. They are no part of the model's
// memory estimate, which is a function of the spec alone.
struct InStepEncoders {
    int64_t text_values = 0;
    int64_t vae_values = 0;
    int64_t value_bytes = 4; // 2 for a bf16 run on CUDA (they run in the run's precision), else 4
    double bytes() const { return double(text_values + vae_values) * double(value_bytes); }
};

// nullopt when the steps encode nothing: another kind, or a cache complete for this pipeline and
// data.max_pixels (`cache`, as summarizeCaptionDataset gives it). Throws std::invalid_argument naming
// the folder or file whose headers do not read.
std::optional<InStepEncoders> inStepEncoders(const RunSpec& spec, const LatentCacheStatus& cache);

} // namespace parallax

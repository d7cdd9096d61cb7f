#pragma once

#include "core/spec/ModelDims.h"
#include "core/spec/RunSpec.h"
#include "trainer/export/HfExport.h"
#include "trainer/train/Checkpoint.h"

#include <functional>
#include <string>

namespace parallax {

// Images of the run's dataset that set the latent statistics of an exported VAE.
constexpr int64_t kVaeStatisticsSamples = 1024;

// A qwen_image_vae run as a diffusers VAE folder: config.json and diffusion_pytorch_model.safetensors
// (saveQwenImageVae, in bf16 or fp32 as `options` asks), which loadQwenImageVae, diffusers'
// AutoencoderKLQwenImage and a qwen_image pipeline folder (as its vae/) read. The weights are the
// checkpoint's; latents_mean and latents_std are measured over the first kVaeStatisticsSamples images
// of the run's dataset (measureLatentStatistics), so that the latents a transformer trains on are
// standard. exportHfFolder calls it with the run's checkpoint open and checked and options.out empty.
HfExportResult exportVaeFolder(const HfExportOptions& options, const RunSpec& spec, const ModelDims& dims,
                               const CheckpointReader& reader, const std::function<void(const std::string&)>& say);

} // namespace parallax

#pragma once

#include "trainer/models/QwenImageVae.h"

#include <torch/torch.h>

#include <memory>
#include <string>

namespace parallax {

struct QwenImageVaeOptions {
    // kFloat32 or kBFloat16. The checkpoint's F32, BF16 or F16 tensors are converted as they are read.
    torch::ScalarType dtype = torch::kFloat32;
    torch::Device device = torch::kCPU;
    bool encoder = true; // what `parallax-cli cache` needs
    bool decoder = true; // what samples need
};

// Qwen-Image's VAE from a diffusers folder: FOLDER itself (config.json with
// diffusion_pytorch_model.safetensors or its sharded .index.json) or the vae/ folder of a pipeline
// folder (model_index.json). Every tensor of the parts asked for is checked from the headers
// (present, of the shape config.json implies, a floating-point type) before any is read; then each
// is copied from the mapped file straight onto the device in the dtype asked for. Tensors the parts
// do not use (the other part's, or anything else in the file) are not read.
//
// Throws std::invalid_argument naming the folder, the file and the tensor at fault, with every
// problem found: a config.json Parallax does not read (readQwenImageVaeConfig), no weights file, a
// file that is damaged or cut short, a tensor missing, of another shape or of a non-float type.
std::shared_ptr<QwenImageVae> loadQwenImageVae(const std::string& folder, const QwenImageVaeOptions& options = {});

// A VAE of `config` with fresh weights, to train from scratch: freshVaeValue's draws in state-dict
// order from one generator seeded with `seed` (the values a qwen_image_vae model built with that
// seed holds); latent statistics the config lacks are 0 (mean) and 1 (std) until measured
// (measureLatentStatistics). The same seed gives the same weights on every device.
std::shared_ptr<QwenImageVae> initQwenImageVae(QwenImageVaeConfig config, uint64_t seed,
                                               const QwenImageVaeOptions& options = {});

// FOLDER/config.json (qwenImageVaeConfigText) and FOLDER/diffusion_pytorch_model.safetensors under
// diffusers' names, F32 or BF16: a folder loadQwenImageVae and diffusers' AutoencoderKLQwenImage
// read back to the same VAE. Both parts must be built. Each file goes through a temporary file
// renamed over it; FileError names a file that cannot be written.
void saveQwenImageVae(QwenImageVae& vae, const std::string& folder, bool bf16 = false);

} // namespace parallax

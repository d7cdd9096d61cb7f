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

} // namespace parallax

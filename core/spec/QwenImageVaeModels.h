#pragma once

// Qwen-Image's VAE (docs/models.md, "Qwen-Image's VAE") counted as the estimates count a model: its
// parameters under diffusers' names and shapes, and the forward FLOPs of one still image. What a
// VAE trained here is sized and priced by.

#include "core/spec/ModelTensors.h"
#include "core/spec/QwenImageVaeConfig.h"

#include <cstdint>
#include <vector>

namespace parallax {

// Every parameter of AutoencoderKLQwenImage for `config`, in the order of its state dict (encoder,
// quant_conv, post_quant_conv, decoder), unit 0, replicated: the time convolutions included, which
// a still image never runs.
std::vector<ModelTensor> qwenImageVaeTensors(const QwenImageVaeConfig& config);

// Forward FLOPs of one image of height x width pixels (multiples of the spatial ratio): 2 x the
// multiply-adds of every convolution that meets data on one frame (a causal 3D convolution's last
// temporal tap alone, as the worker computes it; no time convolution), and of the mid blocks'
// attention, 2 x 2 x (positions)^2 x channels. The encoder's count includes quant_conv, the
// decoder's post_quant_conv; norms, activations and biases are not counted.
struct VaeFlops {
    double encoder = 0, decoder = 0;
};
VaeFlops qwenImageVaeForwardFlops(const QwenImageVaeConfig& config, int64_t height, int64_t width);

} // namespace parallax

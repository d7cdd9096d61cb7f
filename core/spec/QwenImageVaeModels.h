#pragma once

// Qwen-Image's VAE (docs/models.md, "Qwen-Image's VAE") counted as the estimates count a model: its
// parameters under diffusers' names and shapes, and the forward FLOPs of one still image. What a
// VAE trained here is sized and priced by.

#include "core/spec/ModelKinds.h"
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
// `activations`: the elements a training step keeps for backward: five arrays the size of each
// convolution's output (its input, the norm's intermediates and its SiLU, the output), fitted to
// `parallax-cli fit` on the tiny quick start here (peaks 1.01 x the estimate over micro-batches of 1
// to 1,024), and the attention's scores, q, k, v and output.
struct VaeFlops {
    double encoder = 0, decoder = 0;
    double activations = 0;
};
VaeFlops qwenImageVaeForwardFlops(const QwenImageVaeConfig& config, int64_t height, int64_t width);

// qwen_image_vae: AutoencoderKLQwenImage trained here, as a kind's dimensions hold it: model.dim is
// base_dim, model.layers num_res_blocks, model.image_size the square training image's side (a
// multiple of model.patch, the spatial ratio 8), model.channels the image's (3), z_dim 16 (what
// qwen_image reads); dim_mult and temperal_downsample are the published ones; heads 1 (the mid
// blocks' single head). Latent statistics 0 and 1 until measured.
QwenImageVaeConfig qwenImageVaeConfigOf(const ModelDims& dims);
// "tiny" (base_dim 8, one residual block a stage, 32 x 32 images) and "published" (base_dim 96, two,
// 256 x 256).
std::vector<ModelPreset> qwenImageVaePresets();
// One unit, the whole VAE: its parameters replicated, its FLOPs and activations at image_size.
std::vector<UnitEstimate> qwenImageVaeUnits(const ModelDims& dims);

} // namespace parallax

#pragma once

// The objective Qwen-Image's VAE trains with (docs/models.md, "Training the VAE"): a draw from the
// posterior decoded back, its squared error against the images, and the posterior's KL divergence
// from the standard normal, weighted. Gradients reach every parameter the images pass through: the
// encoder, quant_conv, post_quant_conv and the decoder.

#include "trainer/models/QwenImageVae.h"

#include <torch/torch.h>

#include <vector>

namespace parallax {

// The weight of the KL divergence in qwen_image_vae's loss: enough to keep the latents near the
// standard normal without blurring what the decoder gives back.
constexpr double kVaeKlWeight = 1e-3;

struct VaeTrainingLoss {
    torch::Tensor loss;           // reconstruction + kl_weight x kl
    torch::Tensor reconstruction; // mean over every pixel value of (decoded - images)^2
    torch::Tensor kl;             // mean over every latent value of (mean^2 + e^logvar - 1 - logvar) / 2
};

// images (B, input_channels, H, W) in [-1, 1] (sides multiples of the spatial ratio), noise shaped as
// the posterior's mean (B, z_dim, H / 8, W / 8): z = mean + e^(logvar / 2) noise, logvar clamped to
// [-30, 20] as the published posterior clamps it; the decoder's output is compared unclamped. The
// latents are the raw posterior's, not normalized by latents_mean and latents_std (the encoder and
// decoder see each other directly). Runs with autograd, in the VAE's dtype and on its device; the
// error and the divergence are taken in float32.
// Throws std::invalid_argument naming the input whose shape is wrong, std::logic_error for a VAE
// built without its encoder or decoder.
VaeTrainingLoss vaeTrainingLoss(QwenImageVae& vae, const torch::Tensor& images, const torch::Tensor& noise,
                                double klWeight);

// Sets the VAE's latents_mean and latents_std to the per-channel mean and standard deviation (over
// every sample and position, in float64) of the posterior means of `batches` (each (B, 3, H, W) in
// [-1, 1]), so that encode() gives those images latents of mean 0 and deviation 1 per channel, as
// the published statistics do for the published VAE's data. Without autograd. Throws
// std::invalid_argument for no batches or a channel that does not vary.
void measureLatentStatistics(QwenImageVae& vae, const std::vector<torch::Tensor>& batches);

} // namespace parallax

#pragma once

#include "core/spec/QwenImageVaeConfig.h"
#include "trainer/models/QwenImageVaeCoders.h"

#include <torch/torch.h>

#include <memory>
#include <string>
#include <utility>

namespace parallax {

// Qwen-Image's VAE (diffusers' AutoencoderKLQwenImage; docs/models.md, "Qwen-Image's VAE") for
// still images, with the latent normalization Qwen-Image's pipeline and trainers apply around it:
// what turns images into the latents the qwen_image kind trains on, and its samples back into
// images. Its parameters carry diffusers' state-dict names; it is built from a config with its
// parameters declared but not allocated, and loadQwenImageVae (QwenImageVaeWeights.h) gives them
// their values, so use that to get one.
//
// Every call runs without autograd (the VAE is frozen) on the VAE's device and in its dtype (fp32
// or bf16), whatever the input's; the results are in that dtype, on that device. The tracked*
// passes are the exception: they run with autograd as the caller has it, for training the VAE
// (QwenImageVaeTraining.h).
class QwenImageVae : public torch::nn::Module {
public:
    // Builds the encoder, the decoder or both (a cache needs only the encoder, samples only the
    // decoder): the parts left out take no memory, and calling them is a std::logic_error.
    QwenImageVae(QwenImageVaeConfig config, bool withEncoder, bool withDecoder);

    // The posterior's mean and log-variance (clamped to [-30, 20]), each (B, z_dim, H / 8, W / 8),
    // as the published model gives them: not normalized.
    struct Posterior {
        torch::Tensor mean, logvar;
    };
    // images (B, input_channels, H, W) in [-1, 1], H and W multiples of the spatial ratio (8).
    // Throws std::invalid_argument naming the shape at fault.
    Posterior posterior(const torch::Tensor& images);

    // The latents the transformer trains on: (mean - latents_mean) / latents_std per channel, the
    // posterior's mean being its mode. That is what DiffSynth-Studio's trainer caches and what
    // Qwen-Image-Edit's pipelines take from a reference image; diffusers' DreamBooth script draws a
    // sample instead, which sampleLatents gives.
    torch::Tensor encode(const torch::Tensor& images);
    // A draw from the posterior, normalized: (mean + exp(logvar / 2) noise - latents_mean) /
    // latents_std; noise shaped as the mean.
    torch::Tensor sampleLatents(const Posterior& posterior, const torch::Tensor& noise);

    // Normalized latents (B, z_dim, h, w) -> images (B, input_channels, 8 h, 8 w) clamped to
    // [-1, 1]: the decoder on latents x latents_std + latents_mean. Throws std::invalid_argument
    // naming the shape at fault.
    torch::Tensor decode(const torch::Tensor& latents);

    // With autograd: the posterior as posterior() gives it; a draw from it, mean + exp(logvar / 2)
    // noise (noise shaped as the mean), not normalized; and raw latents (as the posterior gives them,
    // not normalized) through post_quant_conv and the decoder, unclamped.
    Posterior trackedPosterior(const torch::Tensor& images);
    torch::Tensor draw(const Posterior& posterior, const torch::Tensor& noise);
    torch::Tensor trackedDecode(const torch::Tensor& raw);

    // (x - latents_mean) x (1 / latents_std) and its inverse, x / (1 / latents_std) + latents_mean,
    // per channel of axis 1, with 1 / latents_std taken in fp32 and then cast, as the pipeline and
    // the trainers compute it.
    torch::Tensor normalize(const torch::Tensor& raw) const;
    torch::Tensor denormalize(const torch::Tensor& latents) const;

    const QwenImageVaeConfig& config() const { return m_config; }
    // Replaces latents_mean and latents_std (z_dim values each, every std positive; else
    // std::invalid_argument), as measureLatentStatistics finds them for a VAE trained here.
    void setLatentStatistics(std::vector<double> mean, std::vector<double> std);
    torch::ScalarType dtype() const { return anyWeight().scalar_type(); }
    torch::Device device() const { return anyWeight().device(); }

    std::shared_ptr<QwenImageVaeEncoder> encoder; // null when built without it
    std::shared_ptr<QwenImageVaeDecoder> decoder; // null when built without it
    std::shared_ptr<VaeConv> quant_conv, post_quant_conv;

private:
    const torch::Tensor& anyWeight() const;
    // (latents_mean, 1 / latents_std) as (1, z_dim, 1, 1) in like's dtype, on its device.
    std::pair<torch::Tensor, torch::Tensor> statistics(const torch::Tensor& like) const;
    QwenImageVaeConfig m_config;
};

} // namespace parallax

#pragma once

#include "trainer/models/Model.h"
#include "trainer/models/QwenImageUnits.h"
#include "trainer/models/QwenImageVae.h"

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace parallax {

// Draws images from Qwen-Image as its published pipeline does (diffusers' QwenImagePipeline):
// seeded noise, the flow-matching Euler steps of QwenImageSchedule, true classifier-free guidance
// with the pipeline's norm rescale, then the VAE's decoder. Meant to be called by a run every few
// steps with fixed prompt states and seeds: it runs without autograd, puts the transformer in eval
// mode for the call and gives it back in the mode it found, and changes nothing else.
//
// The transformer is the qwen_image kind's model on one process: its first unit QwenImageEmbed and
// its last QwenImageHead, as constructModel makes them (wrapped blocks are fine). Latents are kept
// in float32 whatever the model's dtype.
class QwenImageSampler {
public:
    // Throws std::invalid_argument when `transformer` is not such a model.
    QwenImageSampler(Model& transformer, QwenImageVae& vae);

    struct Sample {
        torch::Tensor noise;   // (1, 16, H / 8, W / 8) float32, the initial latents
        torch::Tensor latents; // (1, 16, H / 8, W / 8) float32, normalized as the VAE's encode gives them
        torch::Tensor image;   // (1, 3, H, W) in [-1, 1], on the VAE's device, in its dtype
    };

    // promptStates (T, text_dim): the text encoder's states of one prompt, without padding;
    // negativeStates the same for the negative prompt, or undefined. Guidance runs only with both
    // guidance > 1 and a negative prompt, as the pipeline's true_cfg_scale. width and height are
    // multiples of 16. Throws std::invalid_argument naming the argument at fault.
    // `references`: an Edit prompt's reference images' latents (1, 16, h, w) each, put after the
    // latents being drawn in every step as the Edit pipelines do (their velocity is not read).
    Sample sample(const torch::Tensor& promptStates, const torch::Tensor& negativeStates, int64_t width,
                  int64_t height, int64_t steps, double guidance, uint64_t seed,
                  const std::vector<torch::Tensor>& references = {});

    // The pipeline's initial latents for a generator seeded with `seed`: drawn on the CPU (so the
    // same on every device, and equal to torch.randn((1, 1, 16, h, w), generator=torch.Generator()
    // .manual_seed(seed))), then moved to the transformer's device. (1, 16, height / 8, width / 8).
    torch::Tensor initialNoise(int64_t width, int64_t height, uint64_t seed) const;

    // The steps from given initial latents (1, 16, h, w), h and w even: the final latents, float32.
    torch::Tensor denoise(const torch::Tensor& noise, const torch::Tensor& promptStates,
                          const torch::Tensor& negativeStates, int64_t steps, double guidance,
                          const std::vector<torch::Tensor>& references = {});

private:
    // The velocity (1, P, 64) float32 for packed latents at the transformer's timestep t; `grid`'s
    // reference latents, packed in `references`, follow them in the sequence.
    torch::Tensor velocity(const torch::Tensor& packed, const torch::Tensor& references, const torch::Tensor& states,
                           float t, const Batch& grid);
    torch::Tensor promptOnDevice(const torch::Tensor& states, const char* what) const;

    Model& m_transformer;
    QwenImageVae& m_vae;
    QwenImageEmbed* m_embed = nullptr;
    QwenImageHead* m_head = nullptr;
    torch::Device m_device{torch::kCPU};
};

// packLatents' inverse: (B, h / 2 x w / 2, 4 c) -> (B, c, h, w).
torch::Tensor unpackLatents(const torch::Tensor& packed, int64_t height, int64_t width);

} // namespace parallax

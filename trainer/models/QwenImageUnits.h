#pragma once

#include "core/spec/ModelDims.h"
#include "trainer/models/Linear.h"
#include "trainer/models/Model.h"
#include "trainer/models/QwenImageRope.h"
#include "trainer/models/RmsNorm.h"

namespace parallax {

// The units of Qwen-Image's diffusion transformer as published (docs/models.md, qwen_image; diffusers'
// QwenImageTransformer2DModel). Their modules carry diffusers' names, which are also the LoRA
// target names ("to_q", "to_out.0", "img_mod.1", "img_mlp.net.2"). Activation between units:
// {text (B, T, C), image (B, P, C), timestep embedding (B, C)}. Under zero_cond_t (Edit-2511) with
// reference images the embedding is (2 B, C): the batch's timesteps', then timestep 0's, which the
// image stream's modulation of the reference tokens reads (diffusers' modulate_index).

// Packs latents (B, c, H, W) into tokens of 2 x 2 (B, H / 2 x W / 2, 4 c), each token channel by
// channel, then row and column within the 2 x 2 (as diffusers' pipelines pack them).
torch::Tensor packLatents(const torch::Tensor& latents);

// The packed grids of a batch's image tokens: the image being made (batch.images), then each
// reference image of an Edit batch (batch.reference_latents).
std::vector<PackedGrid> latentGrids(const Batch& batch);

// Builds x_t = (1 - sigma) latents + sigma noise from the batch, packs it, appends the packed
// reference latents of an Edit batch, and embeds them all (img_in),
// normalizes and projects the prompt's states (txt_norm, txt_in) and embeds sigma
// (time_text_embed.timestep_embedder).
class QwenImageEmbed : public Unit {
public:
    explicit QwenImageEmbed(const ModelDims& dims);
    Activation forward(const Activation& in, const Batch& batch) override;
    // The same for latents that are already x_t and packed (B, P, 4 c), at sigma (B), with the
    // prompt's states (B, T, text_dim): what a sampler steps. `made`: the tokens of the image being
    // made, the first of `packed`; the rest are reference images' (0: all are made).
    Activation embed(const torch::Tensor& packed, const torch::Tensor& textStates, const torch::Tensor& sigma,
                     int64_t made = 0);
    std::string kindName() const override { return "embed"; }
    std::string publishedName(const std::string& local) const override { return local; }

    std::shared_ptr<Linear> img_in, txt_in, linear_1, linear_2;
    std::shared_ptr<RmsNorm> txt_norm;

private:
    bool m_zeroCondT;
};

// One transformer block (transformer_blocks.<index>): per stream a 6-way modulation of SiLU(temb),
// LayerNorm without affine (eps 1e-6), q/k/v with per-head RMSNorm of q and k and MSRoPE, joint
// attention over [text, image] with the prompt's mask on the keys, gated residuals, a GELU-tanh MLP.
// `last`: the text stream's output is read by nothing, so only its keys and values are computed.
class QwenImageBlock : public Unit {
public:
    QwenImageBlock(const ModelDims& dims, int64_t index);
    Activation forward(const Activation& in, const Batch& batch) override;
    std::string kindName() const override { return "block"; }
    bool checkpointUnit() const override { return true; }
    std::string publishedName(const std::string& local) const override {
        return "transformer_blocks." + std::to_string(m_index) + "." + local;
    }
    // The last block's text output projection and MLP: nothing reads the text stream after it.
    std::vector<std::string> withoutGradient() const override {
        return m_last ? std::vector<std::string>{"attn.to_add_out", "txt_mlp"} : std::vector<std::string>{};
    }

    struct Stream {
        std::shared_ptr<Linear> mod, q, k, v, out, mlp_in, mlp_out;
        std::shared_ptr<RmsNorm> norm_q, norm_k;
    };
    Stream image, text;

private:
    int64_t m_index;
    bool m_last;
    int64_t m_headDim;
    double m_theta;
    std::vector<int64_t> m_axes;
};

// norm_out (AdaLayerNormContinuous: scale, then shift, of SiLU(temb)) and proj_out; the loss is
// the squared error against noise - latents, packed, summed over every value of the image being
// made (an Edit batch's reference tokens are predicted by nothing).
class QwenImageHead : public Unit {
public:
    explicit QwenImageHead(const ModelDims& dims);
    Activation forward(const Activation& in, const Batch& batch) override;
    std::string kindName() const override { return "head"; }
    std::string publishedName(const std::string& local) const override { return local; }
    // The velocity the model predicts for image tokens (B, P, C) under temb (B, C), or zero_cond_t's
    // (2 B, C) of which the first B rows are the batch's: (B, P, 4 c).
    torch::Tensor predict(const torch::Tensor& image, const torch::Tensor& temb);

    std::shared_ptr<Linear> norm_linear, proj_out;
};

} // namespace parallax

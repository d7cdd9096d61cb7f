#pragma once

// The encoder and decoder of Qwen-Image's VAE for one frame (docs/models.md, "Qwen-Image's VAE"),
// under diffusers' names (QwenImageEncoder3d, QwenImageDecoder3d).

#include "core/spec/QwenImageVaeConfig.h"
#include "trainer/models/QwenImageVaeBlocks.h"

#include <memory>
#include <vector>

namespace parallax {

// conv_in, down_blocks (per stage num_res_blocks residual blocks, then a downsampling except after
// the last stage, numbered in that order), mid_block, norm_out, SiLU, conv_out to 2 z_dim channels
// (the posterior's mean, then its log-variance, before quant_conv).
class QwenImageVaeEncoder : public torch::nn::Module {
public:
    explicit QwenImageVaeEncoder(const QwenImageVaeConfig& config);
    // (B, input_channels, H, W) -> (B, 2 z_dim, H / ratio, W / ratio).
    torch::Tensor forward(const torch::Tensor& images);

    std::shared_ptr<VaeConv> conv_in, conv_out;
    std::vector<std::shared_ptr<VaeBlock>> down_blocks;
    std::shared_ptr<VaeMidBlock> mid_block;
    std::shared_ptr<VaeNorm> norm_out;
};

// conv_in, mid_block, up_blocks (stage i: resnets 0 .. num_res_blocks, then upsamplers.0 except in
// the last stage; a stage after an upsampling reads half its nominal channels), norm_out, SiLU,
// conv_out to input_channels. Unclamped.
class QwenImageVaeDecoder : public torch::nn::Module {
public:
    explicit QwenImageVaeDecoder(const QwenImageVaeConfig& config);
    // (B, z_dim, h, w) -> (B, input_channels, h x ratio, w x ratio).
    torch::Tensor forward(const torch::Tensor& latents);

    std::shared_ptr<VaeConv> conv_in, conv_out;
    std::shared_ptr<VaeMidBlock> mid_block;
    std::vector<std::shared_ptr<VaeBlock>> up_blocks; // every resnet and upsampler, in order
    std::shared_ptr<VaeNorm> norm_out;
};

} // namespace parallax

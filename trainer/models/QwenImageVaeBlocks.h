#pragma once

// The blocks of Qwen-Image's VAE (docs/models.md, "Qwen-Image's VAE") for one frame: tensors
// (B, C, H, W). Modules carry diffusers' names, so that the VAE's parameter names are those of
// AutoencoderKLQwenImage's state dict ("encoder.down_blocks.3.conv1.weight",
// "decoder.up_blocks.0.upsamplers.0.resample.1.bias"). Forward passes run without autograd (the VAE
// is frozen) and reuse their temporaries in place.

#include "trainer/models/QwenImageVaeLayers.h"

#include <torch/torch.h>

#include <memory>

namespace parallax {

// A block of the encoder's or decoder's chain: one frame in, one frame out.
class VaeBlock : public torch::nn::Module {
public:
    virtual torch::Tensor forward(const torch::Tensor& x) = 0;
};

// QwenImageResidualBlock: conv2(SiLU(norm2(conv1(SiLU(norm1(x)))))) + shortcut(x), the shortcut a
// 1 x 1 x 1 convolution where the channel count changes, else x itself. Dropout is not applied
// (evaluation).
class VaeResidualBlock : public VaeBlock {
public:
    VaeResidualBlock(int64_t in, int64_t out);
    torch::Tensor forward(const torch::Tensor& x) override;

    std::shared_ptr<VaeNorm> norm1, norm2;
    std::shared_ptr<VaeConv> conv1, conv2, conv_shortcut; // conv_shortcut null where in == out
};

// QwenImageAttentionBlock: single-head self-attention over the H x W positions, x + proj(softmax(q
// k^T / sqrt(C)) v) with q | k | v = to_qkv(norm(x)) (1 x 1 convolutions). The softmax runs in fp32
// whatever the dtype, and over blocks of query rows so that the scores of a large image (16384
// positions for 1024 x 1024) never take more than kVaeAttentionBytes at once.
class VaeAttentionBlock : public VaeBlock {
public:
    explicit VaeAttentionBlock(int64_t channels);
    torch::Tensor forward(const torch::Tensor& x) override;

    std::shared_ptr<VaeNorm> norm;
    std::shared_ptr<VaeConv> to_qkv, proj;
};

constexpr int64_t kVaeAttentionBytes = int64_t(256) << 20;

// QwenImageMidBlock: resnets.0, attentions.0, resnets.1, all of `channels`.
class VaeMidBlock : public VaeBlock {
public:
    explicit VaeMidBlock(int64_t channels);
    torch::Tensor forward(const torch::Tensor& x) override;

    std::shared_ptr<VaeResidualBlock> first, second;
    std::shared_ptr<VaeAttentionBlock> attention;
};

// QwenImageResample "downsample2d" / "downsample3d": one zero column right and one zero row below,
// then resample.1, a 3 x 3 convolution of stride 2 (H -> H / 2). The temporal one holds time_conv
// (3 x 1 x 1) too, which the published model runs from a video's second chunk on: one frame passes
// it by.
class VaeDownsample : public VaeBlock {
public:
    VaeDownsample(int64_t channels, bool temporal);
    torch::Tensor forward(const torch::Tensor& x) override;

    std::shared_ptr<VaeConv> resample, time_conv; // time_conv null where not temporal
};

// QwenImageResample "upsample2d" / "upsample3d": every pixel a 2 x 2 block (nearest-exact at scale 2),
// then resample.1, a 3 x 3 convolution (padding 1) to channels / 2. The temporal one holds time_conv
// (3 x 1 x 1, to 2 x channels), which the published model skips on the first latent frame: one frame
// passes it by.
class VaeUpsample : public VaeBlock {
public:
    VaeUpsample(int64_t channels, bool temporal);
    torch::Tensor forward(const torch::Tensor& x) override;

    std::shared_ptr<VaeConv> resample, time_conv; // time_conv null where not temporal
};

} // namespace parallax

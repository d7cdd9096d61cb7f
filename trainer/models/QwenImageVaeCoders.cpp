#include "trainer/models/QwenImageVaeCoders.h"

#include "trainer/models/Layers.h"

#include <string>

namespace parallax {

namespace {

constexpr int64_t kCausal = 3; // kt of conv_in and conv_out

// SiLU(norm_out(x)) through conv_out, the last step of both coders.
torch::Tensor head(VaeNorm& norm, VaeConv& conv, const torch::Tensor& x) {
    return conv.forward(norm.forwardSilu(x));
}

} // namespace

QwenImageVaeEncoder::QwenImageVaeEncoder(const QwenImageVaeConfig& config) {
    const size_t stages = config.dim_mult.size();
    conv_in = register_module("conv_in", std::make_shared<VaeConv>(config.input_channels, config.base_dim, kCausal, 3));
    const auto group = moduleGroup(*this, "down_blocks");
    int64_t channels = config.base_dim;
    for (size_t stage = 0; stage < stages; ++stage) {
        const int64_t out = config.stageChannels(stage);
        for (int64_t i = 0; i < config.num_res_blocks; ++i) {
            down_blocks.push_back(std::make_shared<VaeResidualBlock>(channels, out));
            channels = out;
        }
        if (stage + 1 < stages)
            down_blocks.push_back(std::make_shared<VaeDownsample>(channels, config.temperal_downsample[stage]));
    }
    for (size_t i = 0; i < down_blocks.size(); ++i) group->register_module(std::to_string(i), down_blocks[i]);
    mid_block = register_module("mid_block", std::make_shared<VaeMidBlock>(channels));
    norm_out = register_module("norm_out", std::make_shared<VaeNorm>(std::vector<int64_t>{channels, 1, 1, 1}));
    conv_out = register_module("conv_out", std::make_shared<VaeConv>(channels, 2 * config.z_dim, kCausal, 3));
}

torch::Tensor QwenImageVaeEncoder::forward(const torch::Tensor& images) {
    torch::Tensor x = conv_in->forward(images);
    for (const auto& block : down_blocks) x = block->forward(x);
    return head(*norm_out, *conv_out, mid_block->forward(x));
}

QwenImageVaeDecoder::QwenImageVaeDecoder(const QwenImageVaeConfig& config) {
    const size_t stages = config.dim_mult.size();
    int64_t channels = config.stageChannels(stages - 1);
    conv_in = register_module("conv_in", std::make_shared<VaeConv>(config.z_dim, channels, kCausal, 3));
    mid_block = register_module("mid_block", std::make_shared<VaeMidBlock>(channels));
    const auto group = moduleGroup(*this, "up_blocks");
    for (size_t stage = 0; stage < stages; ++stage) {
        const auto block = moduleGroup(*group, std::to_string(stage));
        const auto resnets = moduleGroup(*block, "resnets");
        const int64_t out = config.stageChannels(stages - 1 - stage);
        for (int64_t i = 0; i <= config.num_res_blocks; ++i) {
            up_blocks.push_back(resnets->register_module(std::to_string(i), std::make_shared<VaeResidualBlock>(channels, out)));
            channels = out;
        }
        if (stage + 1 < stages) {
            const bool temporal = config.temperal_downsample[stages - 2 - stage]; // the downsamplings reversed
            up_blocks.push_back(moduleGroup(*block, "upsamplers")
                                    ->register_module("0", std::make_shared<VaeUpsample>(channels, temporal)));
            channels /= 2;
        }
    }
    norm_out = register_module("norm_out", std::make_shared<VaeNorm>(std::vector<int64_t>{channels, 1, 1, 1}));
    conv_out = register_module("conv_out", std::make_shared<VaeConv>(channels, config.input_channels, kCausal, 3));
}

torch::Tensor QwenImageVaeDecoder::forward(const torch::Tensor& latents) {
    torch::Tensor x = mid_block->forward(conv_in->forward(latents));
    for (const auto& block : up_blocks) x = block->forward(x);
    return head(*norm_out, *conv_out, x);
}

} // namespace parallax

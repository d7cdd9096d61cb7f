#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// Qwen-Image's VAE (diffusers' AutoencoderKLQwenImage) as its config.json describes it; a field the
// file leaves out keeps the published model's value, except the latent statistics, which the
// published config always lists.
struct QwenImageVaeConfig {
    std::string path;                                 // the config.json read
    int64_t base_dim = 96;                            // channels of the first stage
    int64_t z_dim = 16;                               // latent channels
    std::vector<int64_t> dim_mult = {1, 2, 4, 4};     // each stage's channels, in base_dim
    int64_t num_res_blocks = 2;                       // residual blocks per encoder stage (one more per decoder stage)
    std::vector<bool> temperal_downsample = {false, true, true}; // (diffusers' spelling) per downsampling
    int64_t input_channels = 3;                       // RGB
    std::vector<double> latents_mean, latents_std;    // z_dim each: the per-channel normalization of the latents

    // An image's side over its latents' side: 2 per downsampling (8 as published).
    int64_t spatialRatio() const { return int64_t(1) << (dim_mult.size() - 1); }
    // Channels of stage i (0 .. dim_mult.size() - 1).
    int64_t stageChannels(size_t i) const { return base_dim * dim_mult.at(i); }
};

constexpr const char* kQwenImageVaeClass = "AutoencoderKLQwenImage";

// The VAE's folder in FOLDER: FOLDER itself when it holds config.json, else FOLDER/vae of a diffusers
// pipeline folder (model_index.json). Throws std::invalid_argument naming FOLDER when it is neither.
std::string qwenImageVaeFolder(const std::string& folder);

// Reads config.json of qwenImageVaeFolder(folder). Throws std::invalid_argument naming the file and
// the key at fault: another _class_name, a size that is not a positive whole number or larger than
// any VAE's, temperal_downsample not one flag per downsampling, attention in the encoder's stages
// (attn_scales, which the published model leaves empty), latent statistics missing, not z_dim
// finite numbers, or a standard deviation that is not positive.
QwenImageVaeConfig readQwenImageVaeConfig(const std::string& folder);

// config.json's text for `config`, as diffusers' save_config writes AutoencoderKLQwenImage's
// (_class_name, then the fields in name order, attn_scales empty and dropout 0): what
// readQwenImageVaeConfig and diffusers' from_pretrained read back to the same VAE.
std::string qwenImageVaeConfigText(const QwenImageVaeConfig& config);

} // namespace parallax

#pragma once

// The parametrized layers of Qwen-Image's VAE (docs/models.md, "Qwen-Image's VAE"), for images:
// tensors (B, C, H, W), one frame of the published model's videos (B, C, T, H, W).

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace parallax {

// A layer whose parameters are declared (local name and shape, as diffusers' state dict holds them)
// when it is built and registered only when their values are given: building the VAE from a config
// allocates nothing, so a checkpoint's headers are checked against the declared shapes before any
// tensor of a config's claimed size exists.
class VaeLeaf : public torch::nn::Module {
public:
    struct Declared {
        std::string name; // "weight", "bias", "gamma"
        std::vector<int64_t> shape;
    };
    const std::vector<Declared>& declared() const { return m_declared; }
    // Registers `value` (of the declared shape; no gradient) as parameter `name`.
    void give(const std::string& name, const torch::Tensor& value);

protected:
    void declare(const std::string& name, std::vector<int64_t> shape, torch::Tensor* slot);

private:
    std::vector<Declared> m_declared;
    std::map<std::string, torch::Tensor*> m_slots;
};

// A fresh value for a declared parameter, to train from scratch: a convolution's weight ~ N(0, 1 /
// fan_in) with fan_in its input channels times its spatial taps (one frame meets one temporal tap),
// a bias 0, a norm's gamma 1; drawn from `gen` (float32, on the CPU).
torch::Tensor freshVaeValue(const VaeLeaf::Declared& declared, torch::Generator& gen);

// A convolution under diffusers' name and shape: a causal 3D one (weight (out, in, kt, k, k), the
// published QwenImageCausalConv3d) or a 2D one (weight (out, in, k, k)), with bias.
//
// One frame through a causal 3D convolution: the published model pads 2 (kt - 1) / 2 zero frames in
// front of a video and none behind, so on one frame every temporal tap but the last meets zeros and
// the result is the 2D convolution by the last tap, weight[:, :, kt - 1], with the same spatial
// padding. That is computed here, exactly diffusers' numbers at a third of the work.
class VaeConv : public VaeLeaf {
public:
    // temporal: kt of a causal 3D convolution, 0 for a 2D one. padding: spatial zeros on each side.
    VaeConv(int64_t in, int64_t out, int64_t temporal, int64_t kernel, int64_t padding = 0, int64_t stride = 1);
    // (B, in, H, W) -> (B, out, H', W').
    torch::Tensor forward(const torch::Tensor& x);

    torch::Tensor weight, bias;

private:
    bool m_causal;
    int64_t m_padding, m_stride;
};

// QwenImageRMS_norm: x / max(||x||_2 over the channels, 1e-12) (in fp32 for bf16 and f16 inputs, as
// F.normalize there), cast back, times sqrt(channels) and gamma. No epsilon inside the root: the
// published norm is a unit vector scaled, not x / sqrt(mean(x^2) + eps).
class VaeNorm : public VaeLeaf {
public:
    // gammaShape: (channels, 1, 1, 1) in the residual blocks and at the outputs, (channels, 1, 1) in
    // the attention block, as the published parameters are shaped.
    explicit VaeNorm(std::vector<int64_t> gammaShape);
    torch::Tensor forward(const torch::Tensor& x); // (B, C, H, W)
    // SiLU(forward(x)), what every norm but the attention's feeds, computed in place.
    torch::Tensor forwardSilu(const torch::Tensor& x);

    torch::Tensor gamma;

private:
    int64_t m_channels;
};

} // namespace parallax

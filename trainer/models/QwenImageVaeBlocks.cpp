#include "trainer/models/QwenImageVaeBlocks.h"

#include "trainer/models/Layers.h"

#include <algorithm>
#include <cmath>

namespace parallax {

namespace {

constexpr int64_t kCausal = 3; // kt of the residual blocks' and the time convolutions' kernels

} // namespace

VaeResidualBlock::VaeResidualBlock(int64_t in, int64_t out) {
    norm1 = register_module("norm1", std::make_shared<VaeNorm>(std::vector<int64_t>{in, 1, 1, 1}));
    conv1 = register_module("conv1", std::make_shared<VaeConv>(in, out, kCausal, 3));
    norm2 = register_module("norm2", std::make_shared<VaeNorm>(std::vector<int64_t>{out, 1, 1, 1}));
    conv2 = register_module("conv2", std::make_shared<VaeConv>(out, out, kCausal, 3));
    if (in != out) conv_shortcut = register_module("conv_shortcut", std::make_shared<VaeConv>(in, out, 1, 1));
}

torch::Tensor VaeResidualBlock::forward(const torch::Tensor& x) {
    torch::Tensor h = conv1->forward(norm1->forwardSilu(x));
    h = conv2->forward(norm2->forwardSilu(h));
    return h.add_(conv_shortcut ? conv_shortcut->forward(x) : x);
}

VaeAttentionBlock::VaeAttentionBlock(int64_t channels) {
    norm = register_module("norm", std::make_shared<VaeNorm>(std::vector<int64_t>{channels, 1, 1}));
    to_qkv = register_module("to_qkv", std::make_shared<VaeConv>(channels, 3 * channels, 0, 1));
    proj = register_module("proj", std::make_shared<VaeConv>(channels, channels, 0, 1));
}

torch::Tensor VaeAttentionBlock::forward(const torch::Tensor& x) {
    const int64_t b = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3), positions = h * w;
    // (B, 3C, H, W) -> (B, HW, 3C): each position's q | k | v, C channels each. The keys' bias adds
    // q . b_k to every score of a query's row, which softmax cancels: it is left out, so that its
    // gradient is exactly zero when the VAE trains (noise-sized otherwise, which Adam would turn into
    // steps of random sign that differ between layouts).
    const torch::Tensor& bias = to_qkv->bias;
    const torch::Tensor withoutKeys =
        torch::cat({bias.narrow(0, 0, c), torch::zeros_like(bias.narrow(0, c, c)), bias.narrow(0, 2 * c, c)});
    const torch::Tensor qkv =
        torch::conv2d(norm->forward(x), to_qkv->weight, withoutKeys).flatten(2).transpose(1, 2);
    const std::vector<torch::Tensor> parts = qkv.chunk(3, -1);
    const torch::Tensor keys = parts[1].transpose(1, 2); // (B, C, HW)
    const double scale = 1.0 / std::sqrt(double(c));
    const int64_t rows = std::clamp<int64_t>(kVaeAttentionBytes / (b * positions * 4), 1, positions);
    torch::Tensor mixed = torch::empty({b, positions, c}, x.options()); // (B, HW, C)
    for (int64_t r = 0; r < positions; r += rows) {
        const int64_t end = std::min(r + rows, positions);
        const torch::Tensor scores = torch::matmul(parts[0].slice(1, r, end), keys).mul_(scale); // (B, rows, HW)
        const torch::Tensor probs = torch::softmax(scores.to(torch::kFloat32), -1).to(x.scalar_type());
        mixed.slice(1, r, end).copy_(torch::matmul(probs, parts[2]));
    }
    return proj->forward(mixed.transpose(1, 2).reshape({b, c, h, w})).add_(x);
}

VaeMidBlock::VaeMidBlock(int64_t channels) {
    const auto resnets = moduleGroup(*this, "resnets");
    first = resnets->register_module("0", std::make_shared<VaeResidualBlock>(channels, channels));
    second = resnets->register_module("1", std::make_shared<VaeResidualBlock>(channels, channels));
    attention = moduleGroup(*this, "attentions")->register_module("0", std::make_shared<VaeAttentionBlock>(channels));
}

torch::Tensor VaeMidBlock::forward(const torch::Tensor& x) {
    return second->forward(attention->forward(first->forward(x)));
}

VaeDownsample::VaeDownsample(int64_t channels, bool temporal) {
    resample = moduleGroup(*this, "resample")->register_module("1", std::make_shared<VaeConv>(channels, channels, 0, 3, 0, 2));
    if (temporal) time_conv = register_module("time_conv", std::make_shared<VaeConv>(channels, channels, kCausal, 1));
}

torch::Tensor VaeDownsample::forward(const torch::Tensor& x) {
    namespace F = torch::nn::functional;
    return resample->forward(F::pad(x, F::PadFuncOptions({0, 1, 0, 1}))); // (left, right, top, bottom)
}

VaeUpsample::VaeUpsample(int64_t channels, bool temporal) {
    resample = moduleGroup(*this, "resample")->register_module("1", std::make_shared<VaeConv>(channels, channels / 2, 0, 3, 1));
    if (temporal) time_conv = register_module("time_conv", std::make_shared<VaeConv>(channels, 2 * channels, kCausal, 1));
}

torch::Tensor VaeUpsample::forward(const torch::Tensor& x) {
    // Nearest at an integer scale of 2 copies pixel i to 2i and 2i + 1, as nearest-exact does there.
    return resample->forward(torch::upsample_nearest2d(x, {2 * x.size(2), 2 * x.size(3)}));
}

} // namespace parallax

#include "trainer/models/Layers.h"

#include "trainer/compat/TorchCompat.h"

#include <cmath>

namespace parallax {

torch::Tensor multiHeadAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                 int64_t headDim, bool causal) {
    const int64_t batch = q.size(0);
    const int64_t heads = q.size(2) / headDim;
    auto split = [&](const torch::Tensor& x) { // (B, S, C') -> (B, heads, S, headDim)
        return x.reshape({batch, x.size(1), heads, headDim}).transpose(1, 2);
    };
    torch::Tensor out = compat::attention(split(q), split(k), split(v), causal); // (B, heads, S, headDim)
    return out.transpose(1, 2).reshape({batch, q.size(1), heads * headDim});   // (B, S, C')
}

torch::Tensor patchify(const torch::Tensor& images, int64_t patch) {
    const int64_t b = images.size(0), c = images.size(1), side = images.size(2) / patch;
    return images.reshape({b, c, side, patch, side, patch}) // (B, c, gy, p, gx, p)
        .permute({0, 2, 4, 1, 3, 5})                        // (B, gy, gx, c, p, p)
        .reshape({b, side * side, c * patch * patch});      // (B, P, Q)
}

torch::Tensor unpatchify(const torch::Tensor& patches, int64_t patch, int64_t channels, int64_t imageSize) {
    const int64_t b = patches.size(0), side = imageSize / patch;
    return patches.reshape({b, side, side, channels, patch, patch}) // (B, gy, gx, c, p, p)
        .permute({0, 3, 1, 4, 2, 5})                                // (B, c, gy, p, gx, p)
        .reshape({b, channels, imageSize, imageSize});              // (B, c, S, S)
}

torch::Tensor timestepFeatures(const torch::Tensor& t) {
    const int64_t half = kTimestepFeatures / 2;
    const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(t.device());
    torch::Tensor freqs = torch::exp(torch::arange(half, options) * (-std::log(10000.0) / half)); // (128)
    torch::Tensor args = (t.to(torch::kFloat32) * 1000.0).unsqueeze(1) * freqs.unsqueeze(0);      // (B, 128)
    return torch::cat({torch::cos(args), torch::sin(args)}, 1);                                    // (B, 256)
}

std::shared_ptr<torch::nn::Module> moduleGroup(torch::nn::Module& parent, const std::string& name) {
    return parent.register_module(name, std::make_shared<torch::nn::Module>(name));
}

torch::Tensor reachingParameters(const torch::Tensor& x, torch::nn::Module& module) {
    torch::Tensor zero;
    for (const torch::Tensor& p : module.parameters())
        if (p.requires_grad()) zero = zero.defined() ? zero + p.sum() * 0 : p.sum() * 0;
    return zero.defined() ? x + zero.to(x.scalar_type()) : x;
}

} // namespace parallax

#include "trainer/models/QwenImageVaeLayers.h"

#include <cmath>
#include <stdexcept>

namespace parallax {

namespace {

constexpr double kNormFloor = 1e-12; // F.normalize's eps: the smallest norm divided by

} // namespace

void VaeLeaf::declare(const std::string& name, std::vector<int64_t> shape, torch::Tensor* slot) {
    m_declared.push_back({name, std::move(shape)});
    m_slots[name] = slot;
}

torch::Tensor freshVaeValue(const VaeLeaf::Declared& d, torch::Generator& gen) {
    if (d.name == "bias") return torch::zeros(d.shape);
    if (d.name == "gamma") return torch::ones(d.shape);
    int64_t fanIn = d.shape.at(1); // (out, in, [kt,] k, k): in times the spatial taps
    for (size_t i = d.shape.size() - 2; i < d.shape.size(); ++i) fanIn *= d.shape[i];
    return torch::randn(d.shape, gen, torch::kFloat32) / std::sqrt(static_cast<double>(fanIn));
}

void VaeLeaf::give(const std::string& name, const torch::Tensor& value) {
    const auto slot = m_slots.find(name);
    if (slot == m_slots.end()) throw std::logic_error("the VAE's layer declares no parameter " + name);
    for (const Declared& d : m_declared)
        if (d.name == name && value.sizes() != c10::IntArrayRef(d.shape))
            throw std::logic_error("the VAE's parameter " + name + " is given another shape than declared");
    *slot->second = register_parameter(name, value, /*requires_grad=*/false);
}

VaeConv::VaeConv(int64_t in, int64_t out, int64_t temporal, int64_t kernel, int64_t padding, int64_t stride)
    : m_causal(temporal > 0), m_padding(m_causal ? kernel / 2 : padding), m_stride(stride) {
    std::vector<int64_t> shape = {out, in};
    if (m_causal) shape.push_back(temporal);
    shape.insert(shape.end(), {kernel, kernel});
    declare("weight", shape, &weight);
    declare("bias", {out}, &bias);
}

torch::Tensor VaeConv::forward(const torch::Tensor& x) {
    // The last temporal tap: the only one a single frame meets (see the class's comment).
    const torch::Tensor w = m_causal ? weight.select(2, weight.size(2) - 1) : weight;
    return torch::conv2d(x, w, bias, m_stride, m_padding);
}

VaeNorm::VaeNorm(std::vector<int64_t> gammaShape) : m_channels(gammaShape.at(0)) {
    declare("gamma", std::move(gammaShape), &gamma);
}

torch::Tensor VaeNorm::forward(const torch::Tensor& x) {
    namespace F = torch::nn::functional;
    const bool low = x.scalar_type() == torch::kBFloat16 || x.scalar_type() == torch::kHalf;
    const torch::Tensor wide = low ? x.to(torch::kFloat32) : x;
    const torch::Tensor unit = F::normalize(wide, F::NormalizeFuncOptions().p(2).dim(1).eps(kNormFloor)).to(x.scalar_type());
    return unit * std::sqrt(double(m_channels)) * gamma.view({m_channels, 1, 1});
}

torch::Tensor VaeNorm::forwardSilu(const torch::Tensor& x) {
    torch::Tensor y = forward(x);
    torch::silu_(y);
    return y;
}

} // namespace parallax

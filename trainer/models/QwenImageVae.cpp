#include "trainer/models/QwenImageVae.h"

#include "core/formats/SafetensorsHeader.h"

#include <cmath>
#include <stdexcept>
#include <utility>

namespace parallax {

namespace {

constexpr double kLogvarMin = -30.0, kLogvarMax = 20.0; // the posterior's clamp of its log-variance

std::string shapeOf(const torch::Tensor& t) { return shapeText(t.sizes().vec()); }

// `what` must be (B, channels, H, W), floating point, no axis empty.
void checkFrames(const torch::Tensor& t, int64_t channels, const std::string& what) {
    if (!t.defined() || t.dim() != 4 || t.size(1) != channels || !t.is_floating_point() || t.numel() == 0)
        throw std::invalid_argument(what + " must be a floating-point (B, " + std::to_string(channels) +
                                    ", H, W) tensor with no empty axis, got " + (t.defined() ? shapeOf(t) : "none"));
}

} // namespace

QwenImageVae::QwenImageVae(QwenImageVaeConfig config, bool withEncoder, bool withDecoder) : m_config(std::move(config)) {
    if (!withEncoder && !withDecoder) throw std::invalid_argument("a VAE needs its encoder, its decoder or both");
    const int64_t z = m_config.z_dim;
    if (withEncoder) {
        encoder = register_module("encoder", std::make_shared<QwenImageVaeEncoder>(m_config));
        quant_conv = register_module("quant_conv", std::make_shared<VaeConv>(2 * z, 2 * z, 1, 1));
    }
    if (withDecoder) {
        post_quant_conv = register_module("post_quant_conv", std::make_shared<VaeConv>(z, z, 1, 1));
        decoder = register_module("decoder", std::make_shared<QwenImageVaeDecoder>(m_config));
    }
}

const torch::Tensor& QwenImageVae::anyWeight() const {
    const torch::Tensor& w = encoder ? encoder->conv_in->weight : decoder->conv_in->weight;
    if (!w.defined()) throw std::logic_error("the VAE's weights are not loaded: build it with loadQwenImageVae");
    return w;
}

QwenImageVae::Posterior QwenImageVae::posterior(const torch::Tensor& images) {
    torch::NoGradGuard noGrad; // not InferenceMode: latents may meet autograd later (the transformer's step)
    return trackedPosterior(images);
}

QwenImageVae::Posterior QwenImageVae::trackedPosterior(const torch::Tensor& images) {
    if (!encoder) throw std::logic_error("this VAE was built without its encoder");
    checkFrames(images, m_config.input_channels, "images");
    const int64_t ratio = m_config.spatialRatio();
    if (images.size(2) % ratio || images.size(3) % ratio)
        throw std::invalid_argument("images are " + std::to_string(images.size(2)) + " x " + std::to_string(images.size(3)) +
                                    " (H x W); both sides must be multiples of " + std::to_string(ratio) +
                                    ", the VAE's spatial ratio: crop or resize them to such sides");
    const torch::Tensor moments = quant_conv->forward(encoder->forward(images.to(device(), dtype())));
    const std::vector<torch::Tensor> halves = moments.chunk(2, 1); // mean | log-variance
    return {halves[0], halves[1].clamp(kLogvarMin, kLogvarMax)};
}

torch::Tensor QwenImageVae::encode(const torch::Tensor& images) {
    torch::NoGradGuard noGrad;
    return normalize(posterior(images).mean);
}

torch::Tensor QwenImageVae::sampleLatents(const Posterior& p, const torch::Tensor& noise) {
    torch::NoGradGuard noGrad;
    return normalize(draw(p, noise));
}

torch::Tensor QwenImageVae::draw(const Posterior& p, const torch::Tensor& noise) {
    if (!noise.defined() || noise.sizes() != p.mean.sizes())
        throw std::invalid_argument("noise " + (noise.defined() ? shapeOf(noise) : std::string("(none)")) +
                                    " must be shaped as the posterior's mean " + shapeOf(p.mean));
    return p.mean + torch::exp(0.5 * p.logvar) * noise.to(p.mean.device(), p.mean.scalar_type());
}

torch::Tensor QwenImageVae::decode(const torch::Tensor& latents) {
    checkFrames(latents, m_config.z_dim, "latents");
    torch::NoGradGuard noGrad;
    return trackedDecode(denormalize(latents.to(device(), dtype()))).clamp_(-1.0, 1.0);
}

torch::Tensor QwenImageVae::trackedDecode(const torch::Tensor& raw) {
    if (!decoder) throw std::logic_error("this VAE was built without its decoder");
    checkFrames(raw, m_config.z_dim, "latents");
    return decoder->forward(post_quant_conv->forward(raw.to(device(), dtype())));
}

std::pair<torch::Tensor, torch::Tensor> QwenImageVae::statistics(const torch::Tensor& like) const {
    if (like.dim() != 4 || like.size(1) != m_config.z_dim)
        throw std::invalid_argument("latents " + shapeOf(like) + " do not have the " + std::to_string(m_config.z_dim) +
                                    " channels of latents_mean and latents_std on axis 1");
    const auto column = [&](const std::vector<double>& values) {
        return torch::tensor(values, torch::kFloat64).to(torch::kFloat32).view({1, m_config.z_dim, 1, 1});
    };
    const torch::Tensor mean = column(m_config.latents_mean), inverse = 1.0 / column(m_config.latents_std);
    const auto options = like.options();
    return {mean.to(options), inverse.to(options)};
}

void QwenImageVae::setLatentStatistics(std::vector<double> mean, std::vector<double> std) {
    const auto z = static_cast<size_t>(m_config.z_dim);
    if (mean.size() != z || std.size() != z)
        throw std::invalid_argument("latent statistics need " + std::to_string(z) + " values each (z_dim), got " +
                                    std::to_string(mean.size()) + " means and " + std::to_string(std.size()) +
                                    " standard deviations");
    for (double s : std)
        if (!(s > 0) || !std::isfinite(s))
            throw std::invalid_argument("a latent standard deviation of " + std::to_string(s) +
                                        " cannot divide the latents: every one must be positive and finite");
    m_config.latents_mean = std::move(mean);
    m_config.latents_std = std::move(std);
}

torch::Tensor QwenImageVae::normalize(const torch::Tensor& raw) const {
    const auto [mean, inverse] = statistics(raw);
    return (raw - mean) * inverse;
}

torch::Tensor QwenImageVae::denormalize(const torch::Tensor& latents) const {
    const auto [mean, inverse] = statistics(latents);
    return latents / inverse + mean;
}

} // namespace parallax

#include "trainer/models/QwenImageVaeTraining.h"

namespace parallax {

VaeTrainingLoss vaeTrainingLoss(QwenImageVae& vae, const torch::Tensor& images, const torch::Tensor& noise,
                                double klWeight) {
    const QwenImageVae::Posterior p = vae.trackedPosterior(images);
    const torch::Tensor decoded = vae.trackedDecode(vae.draw(p, noise)).to(torch::kFloat32);
    const torch::Tensor target = images.to(decoded.device(), torch::kFloat32);
    const torch::Tensor mean = p.mean.to(torch::kFloat32), logvar = p.logvar.to(torch::kFloat32);
    VaeTrainingLoss out;
    out.reconstruction = (decoded - target).pow(2).mean();
    out.kl = 0.5 * (mean.pow(2) + logvar.exp() - 1.0 - logvar).mean();
    out.loss = out.reconstruction + klWeight * out.kl;
    return out;
}

void measureLatentStatistics(QwenImageVae& vae, const std::vector<torch::Tensor>& batches) {
    if (batches.empty()) throw std::invalid_argument("measuring latent statistics needs at least one batch of images");
    torch::NoGradGuard noGrad;
    torch::Tensor sum, squares;
    int64_t count = 0;
    for (const torch::Tensor& images : batches) {
        const torch::Tensor mean = vae.posterior(images).mean.to(torch::kCPU, torch::kFloat64); // (B, z, h, w)
        const torch::Tensor s = mean.sum({0, 2, 3}), q = mean.pow(2).sum({0, 2, 3});
        sum = sum.defined() ? sum + s : s;
        squares = squares.defined() ? squares + q : q;
        count += mean.numel() / mean.size(1);
    }
    const torch::Tensor mu = sum / static_cast<double>(count);
    const torch::Tensor sigma = (squares / static_cast<double>(count) - mu.pow(2)).clamp_min(0).sqrt();
    std::vector<double> means(mu.data_ptr<double>(), mu.data_ptr<double>() + mu.numel());
    std::vector<double> deviations(sigma.data_ptr<double>(), sigma.data_ptr<double>() + sigma.numel());
    for (size_t c = 0; c < deviations.size(); ++c)
        if (!(deviations[c] > 0))
            throw std::invalid_argument("latent channel " + std::to_string(c) + " does not vary over the " +
                                        std::to_string(count) + " positions measured: measure more, or other, images");
    vae.setLatentStatistics(std::move(means), std::move(deviations));
}

} // namespace parallax

#include "trainer/models/QwenImageVaeTraining.h"

namespace parallax {

VaeTrainingLoss vaeTrainingLoss(QwenImageVae& vae, const torch::Tensor& images, const torch::Tensor& noise,
                                double klWeight) {
    const QwenImageVae::Posterior p = vae.trackedPosterior(images);
    const torch::Tensor decoded = vae.trackedDecode(vae.draw(p, noise));
    const torch::Tensor target = images.to(decoded.device(), decoded.scalar_type());
    VaeTrainingLoss out;
    out.reconstruction = (decoded - target).pow(2).mean();
    out.kl = 0.5 * (p.mean.pow(2) + p.logvar.exp() - 1.0 - p.logvar).mean();
    out.loss = out.reconstruction + klWeight * out.kl;
    return out;
}

} // namespace parallax

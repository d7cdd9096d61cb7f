#include "trainer/models/QwenImageVaeModel.h"

#include "core/spec/QwenImageVaeModels.h"
#include "trainer/models/QwenImageVaeTraining.h"

namespace parallax {

QwenImageVaeUnit::QwenImageVaeUnit(const ModelDims& dims) {
    vae = register_module("vae", std::make_shared<QwenImageVae>(qwenImageVaeConfigOf(dims), true, true));
    // Every declared parameter allocated (initializeModel or a checkpoint gives the values), trainable.
    for (const auto& item : vae->named_modules()) {
        auto* leaf = dynamic_cast<VaeLeaf*>(item.value().get());
        if (!leaf) continue;
        for (const VaeLeaf::Declared& d : leaf->declared()) leaf->give(d.name, torch::empty(d.shape));
        if (item.key().find("time_conv") != std::string::npos) m_timeConvs.push_back("vae." + item.key());
    }
    for (auto& p : vae->parameters()) p.requires_grad_(true);
}

Activation QwenImageVaeUnit::forward(const Activation& /*in*/, const Batch& batch) {
    const VaeTrainingLoss l = vaeTrainingLoss(*vae, batch.images, batch.noise, kVaeKlWeight);
    const double values = static_cast<double>(batch.images.numel());
    return {l.loss * values, torch::full({}, values, l.loss.options())};
}

} // namespace parallax

#include "trainer/models/VisionEmbed.h"

#include "trainer/models/Layers.h"

namespace parallax {

VisionEmbed::VisionEmbed(const ModelDims& dims) : m_dims(dims) {
    patch = register_module("patch", std::make_shared<Linear>(dims.patchValues(), dims.vision_dim, true, kInitStd));
    pos = register_parameter("pos", torch::empty({dims.imageTokens(), dims.vision_dim}));
}

Activation VisionEmbed::forward(const Activation& /*in*/, const Batch& batch) {
    torch::Tensor images = batch.images.to(patch->weight.scalar_type()); // (B, ch, S, S)
    return {patch->forward(patchify(images, m_dims.patch)) + pos};       // (B, P, Cv)
}

} // namespace parallax

#include "trainer/models/MmditEmbed.h"

#include "trainer/models/Layers.h"

namespace parallax {

MmditEmbed::MmditEmbed(const ModelDims& dims) : m_dims(dims) {
    const int64_t c = dims.dim;
    patch = register_module("patch", std::make_shared<Linear>(dims.patchValues(), c, true, kInitStd));
    image_pos = register_parameter("image_pos", torch::empty({dims.imageTokens(), c}));
    text = register_module("text", std::make_shared<Embedding>(dims.vocab, c));
    text_pos = register_parameter("text_pos", torch::empty({dims.seq_len, c}));
    time_in = register_module("time_in", std::make_shared<Linear>(kTimestepFeatures, c, true, kInitStd));
    time_out = register_module("time_out", std::make_shared<Linear>(c, c, true, kInitStd));
}

Activation MmditEmbed::forward(const Activation& /*in*/, const Batch& batch) {
    const torch::ScalarType dtype = patch->weight.scalar_type();
    torch::Tensor t = batch.timesteps.to(torch::kFloat32);                              // (B)
    torch::Tensor tb = t.reshape({-1, 1, 1, 1});                                       // (B, 1, 1, 1)
    torch::Tensor xt = (1.0 - tb) * batch.images.to(torch::kFloat32) + tb * batch.noise.to(torch::kFloat32);
    torch::Tensor image = patch->forward(patchify(xt.to(dtype), m_dims.patch)) + image_pos; // (B, P, C)
    torch::Tensor caption = batch.tokens;                                               // (B, T)
    torch::Tensor txt = text->forward(caption) + text_pos.narrow(0, 0, caption.size(1)); // (B, T, C)
    torch::Tensor c = time_out->forward(torch::silu(time_in->forward(timestepFeatures(t).to(dtype)))); // (B, C)
    return {txt, image, c};
}

} // namespace parallax

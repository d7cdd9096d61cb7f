#include "trainer/models/MmditHead.h"

#include "trainer/models/Layers.h"
#include "trainer/ops/LayerNorm.h"

namespace parallax {

MmditHead::MmditHead(const ModelDims& dims) : m_dims(dims) {
    // Zero-initialized (adaLN-Zero): the untrained model predicts v = 0.
    mod = register_module("mod", std::make_shared<Linear>(dims.dim, 2 * dims.dim, true, 0.0));
    out = register_module("out", std::make_shared<Linear>(dims.dim, dims.patchValues(), true, 0.0));
}

torch::Tensor MmditHead::predict(const torch::Tensor& image, const torch::Tensor& c) {
    std::vector<torch::Tensor> m = mod->forward(torch::silu(c)).unsqueeze(1).chunk(2, -1); // 2 x (B, 1, C)
    torch::Tensor h = modulate(image, m[1], m[0]);                                          // (B, P, C)
    return unpatchify(out->forward(h), m_dims.patch, m_dims.channels, m_dims.image_size);   // (B, ch, S, S)
}

Activation MmditHead::forward(const Activation& in, const Batch& batch) {
    torch::Tensor v = predict(in.at(1), in.at(2)).to(torch::kFloat32);                 // (B, ch, S, S)
    torch::Tensor target = batch.noise.to(torch::kFloat32) - batch.images.to(torch::kFloat32);
    torch::Tensor lossSum = (v - target).pow(2).sum();
    torch::Tensor count = torch::full({}, static_cast<double>(target.numel()),
                                      torch::TensorOptions().dtype(torch::kFloat32).device(lossSum.device()));
    return {lossSum, count};
}

} // namespace parallax

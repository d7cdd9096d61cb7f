#include "trainer/models/VisionMerge.h"

#include "trainer/ops/LayerNorm.h"
#include "trainer/models/Layers.h"

namespace parallax {

VisionMerge::VisionMerge(const ModelDims& dims) : m_dims(dims) {
    const int64_t c = dims.dim;
    ln = register_module("ln", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dims.vision_dim})));
    mlp1 = register_module("mlp1", std::make_shared<Linear>(dims.vision_dim, c, true, kInitStd));
    mlp2 = register_module("mlp2", std::make_shared<Linear>(c, c, true, kInitStd));
    tok = register_module("tok", std::make_shared<Embedding>(dims.vocab, c));
    pos = register_parameter("pos", torch::empty({dims.imageTokens() + dims.seq_len, c}));
}

Activation VisionMerge::forward(const Activation& in, const Batch& batch) {
    torch::Tensor image = mlp2->forward(mlp1->forwardGelu(layerNorm(*ln, in.at(0)))); // (B, P, C)
    torch::Tensor text = tok->forward(batch.tokens);                                 // (B, T, C)
    const torch::ScalarType dtype = torch::promote_types(image.scalar_type(), text.scalar_type());
    torch::Tensor x = torch::cat({image.to(dtype), text.to(dtype)}, 1);              // (B, P+T, C)
    return {x + pos.narrow(0, 0, x.size(1))};
}

} // namespace parallax

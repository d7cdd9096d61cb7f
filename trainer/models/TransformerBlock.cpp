#include "trainer/models/TransformerBlock.h"

#include "trainer/models/LayerNorm.h"
#include "trainer/models/Layers.h"

#include <cmath>

namespace parallax {

TransformerBlock::TransformerBlock(const Config& config) : m_config(config) {
    const int64_t c = config.dim;
    const double residualStd = kInitStd / std::sqrt(2.0 * static_cast<double>(config.depth));
    ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c})));
    q = register_module("q", std::make_shared<Linear>(c, c, true, kInitStd));
    k = register_module("k", std::make_shared<Linear>(c, c, true, kInitStd));
    v = register_module("v", std::make_shared<Linear>(c, c, true, kInitStd));
    proj = register_module("proj", std::make_shared<Linear>(c, c, true, residualStd));
    ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c})));
    fc1 = register_module("fc1", std::make_shared<Linear>(c, config.ffn, true, kInitStd));
    fc2 = register_module("fc2", std::make_shared<Linear>(config.ffn, c, true, residualStd));
}

Activation TransformerBlock::forward(const Activation& in, const Batch& /*batch*/) {
    torch::Tensor x = in.at(0);      // (B, S, C)
    torch::Tensor h = layerNorm(*ln1, x); // (B, S, C)
    const std::vector<torch::Tensor> qkv = linearStack(h, {q.get(), k.get(), v.get()}); // 3 x (B, S, C)
    torch::Tensor attn = multiHeadAttention(qkv[0], qkv[1], qkv[2], m_config.dim / m_config.heads,
                                            m_config.causal); // (B, S, C)
    auto [mid, h2] = addLayerNorm(*ln2, x, proj->forward(attn)); // (B, S, C) each
    x = mid + fc2->forward(fc1->forwardGelu(h2));                 // (B, S, C)
    return {x};
}

double TransformerBlock::forwardFlopsPerSample() const {
    const int64_t c = m_config.dim, s = m_config.sequence;
    return 4 * linearFlops(c, c, s) + linearFlops(c, m_config.ffn, s) + linearFlops(m_config.ffn, c, s) +
           attentionFlops(s, c);
}

} // namespace parallax

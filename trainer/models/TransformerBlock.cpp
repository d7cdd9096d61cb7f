#include "trainer/models/TransformerBlock.h"

#include "trainer/ops/LayerNorm.h"
#include "trainer/models/Layers.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>

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
    for (Linear* l : {q.get(), k.get(), v.get(), fc1.get()}) l->split = TensorSplit::Column;
    for (Linear* l : {proj.get(), fc2.get()}) l->split = TensorSplit::Row;
    // Every Linear of the block may carry LoRA, under its own module name.
    for (const auto& [name, l] : {std::pair<const char*, Linear*>{"q", q.get()}, {"k", k.get()}, {"v", v.get()},
                                  {"proj", proj.get()}, {"fc1", fc1.get()}, {"fc2", fc2.get()}})
        l->lora_name = name;
}

Activation TransformerBlock::forward(const Activation& in, const Batch& /*batch*/) {
    torch::Tensor x, h; // (B, S, C) each: the block's input and its first LayerNorm
    if (in.size() != 1 && in.size() != 2)
        throw std::logic_error("a transformer block takes {x} or {x, branch}, got " + std::to_string(in.size()) + " tensors");
    if (in.size() == 2) std::tie(x, h) = addLayerNorm(*ln1, in[0], in[1]); // the previous block's residual
    else {
        x = in.at(0);
        h = layerNorm(*ln1, x);
    }
    const std::vector<torch::Tensor> qkv = linearStack(h, {q.get(), k.get(), v.get()}); // 3 x (B, S, C)
    torch::Tensor attn = multiHeadAttention(qkv[0], qkv[1], qkv[2], m_config.dim / m_config.heads,
                                            m_config.causal); // (B, S, C)
    auto [mid, h2] = addLayerNorm(*ln2, x, proj->forward(attn)); // (B, S, C) each
    torch::Tensor branch = fc2->forward(fc1->forwardGelu(h2));    // (B, S, C)
    if (m_handsOnResidual) return {mid, branch};
    return {mid + branch};
}

void deferResidualsWithin(const std::vector<std::shared_ptr<Unit>>& units) {
    for (size_t i = 0; i < units.size(); ++i) {
        auto* block = dynamic_cast<TransformerBlock*>(units[i].get());
        if (!block) continue;
        const auto* next = i + 1 < units.size() ? dynamic_cast<const TransformerBlock*>(units[i + 1].get()) : nullptr;
        block->setHandsOnResidual(next && next->kindName() == block->kindName() &&
                                  next->ln1->options.normalized_shape() == block->ln1->options.normalized_shape());
    }
}

} // namespace parallax

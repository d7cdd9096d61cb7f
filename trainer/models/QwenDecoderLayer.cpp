#include "trainer/models/QwenDecoderLayer.h"

#include "trainer/compat/TorchCompat.h"
#include "trainer/models/Layers.h"
#include "trainer/models/Rotary.h"

#include <stdexcept>

namespace parallax {

torch::Tensor causalMask(int64_t batch, int64_t length, const torch::Tensor& attentionMask, const torch::Device& device) {
    const auto options = torch::TensorOptions().dtype(torch::kBool).device(device);
    const torch::Tensor allowed = torch::ones({length, length}, options).tril(); // (T, T): query row, key column
    const torch::Tensor keys = attentionMask.to(device).to(torch::kBool).view({batch, 1, 1, length});
    const torch::Tensor self = torch::eye(length, options).view({1, 1, length, length});
    return (allowed.view({1, 1, length, length}) & keys) | self; // (B, 1, T, T)
}

torch::Tensor defaultPositions(int64_t batch, int64_t length, const torch::Device& device) {
    return torch::arange(length, torch::TensorOptions().dtype(torch::kInt64).device(device))
        .unsqueeze(0)
        .expand({batch, length});
}

QwenDecoderLayer::QwenDecoderLayer(const ModelDims& d, int64_t index)
    : m_index(index), m_headDim(d.headDim()), m_theta(d.rope_theta), m_mropeSection(d.mrope_section) {
    const int64_t c = d.dim, kv = d.kvHeads() * d.headDim();
    input_layernorm = register_module("input_layernorm", std::make_shared<RmsNorm>(c, d.rms_eps));
    auto attention = moduleGroup(*this, "self_attn");
    q_proj = attention->register_module("q_proj", std::make_shared<Linear>(c, c, true, kInitStd));
    k_proj = attention->register_module("k_proj", std::make_shared<Linear>(c, kv, true, kInitStd));
    v_proj = attention->register_module("v_proj", std::make_shared<Linear>(c, kv, true, kInitStd));
    o_proj = attention->register_module("o_proj", std::make_shared<Linear>(c, c, false, kInitStd));
    post_attention_layernorm = register_module("post_attention_layernorm", std::make_shared<RmsNorm>(c, d.rms_eps));
    auto mlp = moduleGroup(*this, "mlp");
    gate_proj = mlp->register_module("gate_proj", std::make_shared<Linear>(c, d.ffn, false, kInitStd));
    up_proj = mlp->register_module("up_proj", std::make_shared<Linear>(c, d.ffn, false, kInitStd));
    down_proj = mlp->register_module("down_proj", std::make_shared<Linear>(d.ffn, c, false, kInitStd));
    // LoRA targets carry the published module names (PEFT's target_modules).
    for (const auto& [name, layer] : std::initializer_list<std::pair<const char*, Linear*>>{
             {"q_proj", q_proj.get()}, {"k_proj", k_proj.get()}, {"v_proj", v_proj.get()}, {"o_proj", o_proj.get()},
             {"gate_proj", gate_proj.get()}, {"up_proj", up_proj.get()}, {"down_proj", down_proj.get()}})
        layer->lora_name = name;
    // The published tensor-parallel plan: heads and the MLP's width split across ranks.
    for (Linear* l : {q_proj.get(), gate_proj.get(), up_proj.get()}) l->split = TensorSplit::Column;
    for (Linear* l : {k_proj.get(), v_proj.get()}) l->split = TensorSplit::KvColumn;
    for (Linear* l : {o_proj.get(), down_proj.get()}) l->split = TensorSplit::Row;
}

Activation QwenDecoderLayer::forward(const Activation& in, const Batch& batch) {
    const torch::Tensor& x = in.at(0); // (B, T, C)
    const int64_t b = x.size(0), t = x.size(1), d = m_headDim;
    const torch::Tensor n = input_layernorm->forward(x);
    // After tensor parallelism the layers hold this rank's heads: the counts come from their widths.
    const int64_t heads = q_proj->out_features / d, kvHeads = k_proj->out_features / d;
    auto split = [&](const torch::Tensor& y, int64_t h) { return y.view({b, t, h, d}).transpose(1, 2); }; // (B, h, T, D)
    torch::Tensor q = split(q_proj->forward(n), heads);
    torch::Tensor k = split(k_proj->forward(n), kvHeads);
    torch::Tensor v = split(v_proj->forward(n), kvHeads);
    const torch::Tensor positions = batch.positions.defined() ? batch.positions.to(x.device())
                                                              : defaultPositions(b, t, x.device());
    const auto [cos, sin] = rotaryCosSin(positions, d, m_theta, positions.dim() == 3 ? m_mropeSection
                                                                                     : std::vector<int64_t>{});
    q = applyRotary(q, cos, sin);
    k = applyRotary(k, cos, sin);
    if (kvHeads != heads) { // grouped-query attention: each key/value head serves heads / kvHeads queries
        k = k.repeat_interleave(heads / kvHeads, 1);
        v = v.repeat_interleave(heads / kvHeads, 1);
    }
    // Without padding the causal flag alone: no mask to build, and a GPU's flash kernels take it.
    const torch::Tensor attended = batch.attention_mask.defined()
                                       ? compat::attention(q, k, v, causalMask(b, t, batch.attention_mask, x.device()))
                                       : compat::attention(q, k, v, /*causal=*/true);
    const torch::Tensor mid = x + o_proj->forward(attended.transpose(1, 2).reshape({b, t, heads * d}));
    const torch::Tensor m = post_attention_layernorm->forward(mid);
    return {mid + down_proj->forward(torch::silu(gate_proj->forward(m)) * up_proj->forward(m))};
}

} // namespace parallax

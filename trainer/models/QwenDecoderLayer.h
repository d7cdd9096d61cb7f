#pragma once

#include "core/spec/ModelDims.h"
#include "trainer/models/Linear.h"
#include "trainer/models/Model.h"
#include "trainer/models/RmsNorm.h"

namespace parallax {

// One decoder layer of the Qwen2 / Qwen2.5 language models, as published (docs/models.md, qwen2):
// x + o_proj(attention(rope(q_proj(n)), rope(k_proj(n)), v_proj(n))) with n = input_layernorm(x),
// then x + down_proj(silu(gate_proj(m)) * up_proj(m)) with m = post_attention_layernorm(x).
// q, k, v have a bias, o, gate, up, down none; k and v have kv_heads heads (grouped-query
// attention: each key/value head serves heads / kv_heads query heads). Causal, with the padding
// of batch.attention_mask, positions from batch.positions ((B, T) or M-RoPE's (3, B, T); unset:
// 0..T-1). Its modules carry the published names (self_attn.q_proj, mlp.down_proj, ...), which
// are also the LoRA target names. Activation in and out: {x (B, T, C)}.
class QwenDecoderLayer : public Unit {
public:
    // `index`: its place among the decoder layers (model.layers.<index> in published checkpoints).
    QwenDecoderLayer(const ModelDims& dims, int64_t index);

    Activation forward(const Activation& in, const Batch& batch) override;
    std::string kindName() const override { return "block"; }
    bool checkpointUnit() const override { return true; }
    std::optional<ModelPart> partOf(const std::string&) const override { return ModelPart::Language; }
    std::string publishedName(const std::string& local) const override {
        return "model.layers." + std::to_string(m_index) + "." + local;
    }

    std::shared_ptr<RmsNorm> input_layernorm, post_attention_layernorm;
    std::shared_ptr<Linear> q_proj, k_proj, v_proj, o_proj; // under "self_attn"
    std::shared_ptr<Linear> gate_proj, up_proj, down_proj;  // under "mlp"

private:
    int64_t m_index;
    int64_t m_headDim;
    double m_theta;
    std::vector<int64_t> m_mropeSection;
};

// The boolean mask (B, 1, T, T) of a causal attention over keys that `attentionMask` (B, T; true
// for real tokens) keeps; a query always sees itself, so no row is empty. A batch without a mask
// pads nothing: its attention takes the causal flag instead (QwenDecoderLayer::forward).
torch::Tensor causalMask(int64_t batch, int64_t length, const torch::Tensor& attentionMask, const torch::Device& device);

// Positions 0..T-1 for every sample when the batch brings none: (B, T) int64.
torch::Tensor defaultPositions(int64_t batch, int64_t length, const torch::Device& device);

} // namespace parallax

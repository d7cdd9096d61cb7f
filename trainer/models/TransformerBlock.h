#pragma once

#include "trainer/models/Linear.h"
#include "trainer/models/Model.h"

namespace parallax {

// Pre-norm transformer block (docs/models.md): x + proj(attn(ln1(x))), then x + fc2(gelu(fc1(ln2(x)))).
// Used by gpt (causal).
// Activation in and out: {x (B, S, C)}. A block told to hand its residual on returns {x, branch}
// instead of {x + branch}, and a block receiving two tensors adds them inside its first LayerNorm
// (fused on the GPU: addLayerNorm), which saves the add's pass over the float32 residual and, in
// backward, the add of the two gradients that meet at x.
class TransformerBlock : public Unit {
public:
    struct Config {
        int64_t dim = 0;
        int64_t heads = 0;
        int64_t ffn = 0;
        int64_t sequence = 0;   // S, for the FLOP count
        bool causal = true;
        int64_t depth = 0;      // L of the residual scaling of proj and fc2
        std::string kind = "block";
        // The model part its parameters belong to ([finetune]'s freeze switches); none: no switch.
        std::optional<ModelPart> part;
    };
    explicit TransformerBlock(const Config& config);

    Activation forward(const Activation& in, const Batch& batch) override;
    std::string kindName() const override { return m_config.kind; }
    bool checkpointUnit() const override { return true; }
    std::optional<ModelPart> partOf(const std::string&) const override { return m_config.part; }

    // Whether forward returns {x, branch} for the next block to add (deferResidualsWithin sets it).
    void setHandsOnResidual(bool on) { m_handsOnResidual = on; }
    bool handsOnResidual() const { return m_handsOnResidual; }

    torch::nn::LayerNorm ln1{nullptr};
    std::shared_ptr<Linear> q, k, v, proj;
    torch::nn::LayerNorm ln2{nullptr};
    std::shared_ptr<Linear> fc1, fc2;

private:
    Config m_config;
    bool m_handsOnResidual = false;
};

// Among units run one after another in this order (one pipeline chunk), every transformer block
// whose next unit is a block of the same kind and width hands its residual on; the others return
// their sum. Looks through wrappers only by unit type: call it before units are wrapped.
void deferResidualsWithin(const std::vector<std::shared_ptr<Unit>>& units);

} // namespace parallax

#pragma once

#include "trainer/models/Linear.h"
#include "trainer/models/Model.h"

namespace parallax {

// Pre-norm transformer block (docs/models.md): x + proj(attn(ln1(x))), then x + fc2(gelu(fc1(ln2(x)))).
// Used by gpt, the vlm language model (causal) and the vlm vision tower (full attention).
// Activation in and out: {x (B, S, C)}.
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
    };
    explicit TransformerBlock(const Config& config);

    Activation forward(const Activation& in, const Batch& batch) override;
    double forwardFlopsPerSample() const override;
    std::string kindName() const override { return m_config.kind; }

    torch::nn::LayerNorm ln1{nullptr};
    std::shared_ptr<Linear> q, k, v, proj;
    torch::nn::LayerNorm ln2{nullptr};
    std::shared_ptr<Linear> fc1, fc2;

private:
    Config m_config;
};

} // namespace parallax

#pragma once

#include "trainer/models/VocabHead.h"

namespace parallax {

// Last unit of gpt: LayerNorm(C), Linear(C, V) without bias, summed cross-entropy; positions
// 0..T-1 predict tokens 1..T. Activation in: {x (B, T, C)}; out: {loss_sum, loss_count} (float32
// scalars).
class LmHead : public VocabHead {
public:
    LmHead(int64_t dim, int64_t vocab);

    Activation forward(const Activation& in, const Batch& batch) override;
    std::string kindName() const override { return "head"; }
    std::optional<ModelPart> partOf(const std::string&) const override { return ModelPart::Language; }

    // Logits of the positions that predict a label: (B, T, V). Tests read them to check masking.
    torch::Tensor logits(const torch::Tensor& x, int64_t textTokens);

    Linear& vocabProjection() override { return *out; }

    torch::nn::LayerNorm ln{nullptr};
    std::shared_ptr<Linear> out;
};

} // namespace parallax

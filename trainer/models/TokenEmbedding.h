#pragma once

#include "trainer/models/Embedding.h"
#include "trainer/models/Model.h"

namespace parallax {

// gpt's first unit: token embedding plus learned positions of the first T tokens of each sample
// (the last T are the labels). Activation out: {x (B, T, C)}.
class TokenEmbedding : public Unit {
public:
    TokenEmbedding(int64_t vocab, int64_t dim, int64_t seqLen);

    Activation forward(const Activation& in, const Batch& batch) override;
    std::string kindName() const override { return "embed"; }
    std::optional<ModelPart> partOf(const std::string&) const override { return ModelPart::Language; }

    std::shared_ptr<Embedding> tok; // (V, C)
    torch::Tensor pos;                 // (T, C)
};

} // namespace parallax

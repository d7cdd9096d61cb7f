#pragma once

#include "trainer/models/Embedding.h"
#include "trainer/models/Linear.h"
#include "trainer/models/Model.h"

namespace parallax {

// vlm's "merge" unit: projects the vision tower's output into the language model's width, embeds
// the caption and lays out [image tokens; text tokens] plus learned positions.
// Activation in: {vision (B, P, Cv)}; out: {x (B, P+T, C)}.
class VisionMerge : public Unit {
public:
    explicit VisionMerge(const ModelDims& dims);

    Activation forward(const Activation& in, const Batch& batch) override;
    std::string kindName() const override { return "merge"; }
    // The projector is the merger; the caption's embedding and the positions belong to the language model.
    std::optional<ModelPart> partOf(const std::string& parameter) const override {
        return parameter.rfind("tok.", 0) == 0 || parameter == "pos" ? ModelPart::Language : ModelPart::Merger;
    }

    torch::nn::LayerNorm ln{nullptr};   // LayerNorm(Cv)
    std::shared_ptr<Linear> mlp1;       // Linear(Cv, C)
    std::shared_ptr<Linear> mlp2;       // Linear(C, C)
    std::shared_ptr<Embedding> tok;  // (V, C)
    torch::Tensor pos;                  // (P + T, C)

private:
    ModelDims m_dims;
};

} // namespace parallax

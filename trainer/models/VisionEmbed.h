#pragma once

#include "trainer/models/Linear.h"
#include "trainer/models/Model.h"

namespace parallax {

// vlm's first unit: patchify the image, Linear(Q, Cv), learned positions.
// Activation out: {x (B, P, Cv)}.
class VisionEmbed : public Unit {
public:
    explicit VisionEmbed(const ModelDims& dims);

    Activation forward(const Activation& in, const Batch& batch) override;
    std::string kindName() const override { return "vision_embed"; }
    std::optional<ModelPart> partOf(const std::string&) const override { return ModelPart::Vision; }

    std::shared_ptr<Linear> patch; // Linear(Q, Cv)
    torch::Tensor pos;             // (P, Cv)

private:
    ModelDims m_dims;
};

} // namespace parallax

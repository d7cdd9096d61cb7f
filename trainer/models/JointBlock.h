#pragma once

#include "trainer/models/JointStream.h"
#include "trainer/models/Model.h"

namespace parallax {

// mmdit joint block: each stream is modulated by c (adaLN), both attend over [text; image] with
// their own projections, and each updates itself through gated residuals.
// Activation in and out: {text (B, T, C), image (B, P, C), c (B, C)}.
class JointBlock : public Unit {
public:
    // `last`: the text stream only gives keys and values (JointStream's contextOnly).
    JointBlock(const ModelDims& dims, bool last);

    Activation forward(const Activation& in, const Batch& batch) override;
    std::string kindName() const override { return "joint_block"; }
    bool checkpointUnit() const override { return true; }

    std::shared_ptr<JointStream> text;
    std::shared_ptr<JointStream> image;

private:
    ModelDims m_dims;
    bool m_last;
};

} // namespace parallax

#pragma once

#include "trainer/models/Embedding.h"
#include "trainer/models/Linear.h"
#include "trainer/models/Model.h"

namespace parallax {

// mmdit's first unit: builds the noisy image x_t = (1 - t) x0 + t e from the batch, embeds its
// patches and the caption, and turns the timestep into the conditioning vector.
// Activation out: {text (B, T, C), image (B, P, C), c (B, C)}.
class MmditEmbed : public Unit {
public:
    explicit MmditEmbed(const ModelDims& dims);

    Activation forward(const Activation& in, const Batch& batch) override;
    std::string kindName() const override { return "embed"; }

    std::shared_ptr<Linear> patch;      // Linear(Q, C)
    torch::Tensor image_pos;            // (P, C)
    std::shared_ptr<Embedding> text; // (V, C)
    torch::Tensor text_pos;             // (T, C)
    std::shared_ptr<Linear> time_in;    // Linear(256, C)
    std::shared_ptr<Linear> time_out;   // Linear(C, C)

private:
    ModelDims m_dims;
};

} // namespace parallax

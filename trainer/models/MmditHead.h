#pragma once

#include "trainer/models/Linear.h"
#include "trainer/models/Model.h"

namespace parallax {

// mmdit's last unit: modulated LayerNorm of the image stream, Linear(C, Q), unpatchify to the
// predicted velocity, and the rectified-flow loss against v = e - x0.
// Activation in: {text, image (B, P, C), c (B, C)}; out: {loss_sum, loss_count} (float32 scalars).
class MmditHead : public Unit {
public:
    explicit MmditHead(const ModelDims& dims);

    Activation forward(const Activation& in, const Batch& batch) override;
    std::string kindName() const override { return "head"; }

    // The predicted velocity (B, channels, S, S) in the layers' dtype.
    torch::Tensor predict(const torch::Tensor& image, const torch::Tensor& c);

    std::shared_ptr<Linear> mod; // Linear(C, 2C): shift, scale
    std::shared_ptr<Linear> out; // Linear(C, Q)

private:
    ModelDims m_dims;
};

} // namespace parallax

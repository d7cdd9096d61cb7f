#pragma once

#include "trainer/models/Model.h"
#include "trainer/models/QwenImageVae.h"

#include <memory>
#include <string>
#include <vector>

namespace parallax {

// qwen_image_vae (docs/models.md, "Training the VAE"): AutoencoderKLQwenImage as one unit, its
// parameters under "vae." and diffusers' names, trained by vaeTrainingLoss on a batch's images in
// [-1, 1] (Batch::images) and the noise of their posterior draws (Batch::noise, of the latents'
// shape). The last unit of its model: {loss x pixel values, pixel values}. Its time convolutions,
// which a still image never runs, are declared withoutGradient.
class QwenImageVaeUnit : public Unit {
public:
    explicit QwenImageVaeUnit(const ModelDims& dims);
    Activation forward(const Activation& in, const Batch& batch) override;
    std::string kindName() const override { return "vae"; }
    std::vector<std::string> withoutGradient() const override { return m_timeConvs; }

    std::shared_ptr<QwenImageVae> vae;

private:
    std::vector<std::string> m_timeConvs;
};

class QwenImageVaeModel : public Model {
public:
    explicit QwenImageVaeModel(const ModelDims& dims) : Model(dims) {
        addUnit(std::make_shared<QwenImageVaeUnit>(dims));
    }
};

} // namespace parallax

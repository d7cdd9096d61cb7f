#pragma once

#include "trainer/models/Model.h"
#include "trainer/models/QwenImageUnits.h"

namespace parallax {

// Qwen-Image's diffusion transformer as published (docs/models.md, qwen_image): Embed | block x L | Head.
class QwenImageModel : public Model {
public:
    explicit QwenImageModel(const ModelDims& dims) : Model(dims) {
        addUnit(std::make_shared<QwenImageEmbed>(dims));
        for (int64_t i = 0; i < dims.layers; ++i) addUnit(std::make_shared<QwenImageBlock>(dims, i));
        addUnit(std::make_shared<QwenImageHead>(dims));
    }
};

} // namespace parallax

#pragma once

#include "trainer/models/JointBlock.h"
#include "trainer/models/MmditEmbed.h"
#include "trainer/models/MmditHead.h"
#include "trainer/models/Model.h"

namespace parallax {

// Two-stream diffusion transformer trained by rectified flow (docs/models.md, mmdit): embed,
// `layers` joint blocks, head.
class MmditModel : public Model {
public:
    explicit MmditModel(const ModelDims& dims) : Model(dims) {
        addUnit(std::make_shared<MmditEmbed>(dims));
        for (int64_t i = 0; i < dims.layers; ++i) addUnit(std::make_shared<JointBlock>(dims, i + 1 == dims.layers));
        addUnit(std::make_shared<MmditHead>(dims));
    }
};

} // namespace parallax

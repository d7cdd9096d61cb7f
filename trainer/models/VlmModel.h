#pragma once

#include "trainer/models/LmHead.h"
#include "trainer/models/Model.h"
#include "trainer/models/TransformerBlock.h"
#include "trainer/models/VisionEmbed.h"
#include "trainer/models/VisionMerge.h"

namespace parallax {

// Vision encoder + projector + causal LM (docs/models.md, vlm): vision embed, `vision_layers`
// full-attention blocks, merge, `layers` causal blocks, head. Its parts: the vision tower (embed and
// blocks), the merger (the projector) and the language model (the rest); model.freeze_vision freezes
// the first from outside (trainer/finetune).
class VlmModel : public Model {
public:
    explicit VlmModel(const ModelDims& dims) : Model(dims) {
        addUnit(std::make_shared<VisionEmbed>(dims));
        TransformerBlock::Config vision;
        vision.dim = dims.vision_dim;
        vision.heads = dims.vision_heads;
        vision.ffn = dims.vision_ffn;
        vision.sequence = dims.imageTokens();
        vision.causal = false;
        vision.depth = dims.layers; // docs/models.md scales proj and fc2 by L = model.layers everywhere
        vision.kind = "vision_block";
        vision.part = ModelPart::Vision;
        for (int64_t i = 0; i < dims.vision_layers; ++i) addUnit(std::make_shared<TransformerBlock>(vision));
        addUnit(std::make_shared<VisionMerge>(dims));
        TransformerBlock::Config block;
        block.dim = dims.dim;
        block.heads = dims.heads;
        block.ffn = dims.ffn;
        block.sequence = dims.imageTokens() + dims.seq_len;
        block.causal = true;
        block.depth = dims.layers;
        block.part = ModelPart::Language;
        for (int64_t i = 0; i < dims.layers; ++i) addUnit(std::make_shared<TransformerBlock>(block));
        addUnit(std::make_shared<LmHead>(dims.dim, dims.vocab, dims.seq_len, dims.imageTokens(),
                                         LmHead::Labels::Caption));
    }
};

} // namespace parallax

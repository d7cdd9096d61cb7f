#pragma once

#include "trainer/models/Model.h"
#include "trainer/models/QwenDecoderLayer.h"
#include "trainer/models/QwenText.h"
#include "trainer/models/QwenVision.h"

namespace parallax {

// Qwen2.5-VL as published (docs/models.md, qwen2_5_vl): the vision tower, the merger, and the
// Qwen2.5 language model whose embedding takes the image features in place of the <|image_pad|>
// tokens. Units: QwenPatchEmbed | QwenVisionBlock x vision_layers | QwenPatchMerger |
// QwenEmbedding | QwenDecoderLayer x layers | QwenHead. Its parts ([finetune]'s freeze switches):
// the tower (patch embedding and blocks), the merger, the language model.
class Qwen25VlModel : public Model {
public:
    explicit Qwen25VlModel(const ModelDims& dims) : Model(dims) {
        auto layouts = std::make_shared<VisionLayouts>(dims);
        addUnit(std::make_shared<QwenPatchEmbed>(dims, layouts));
        for (int64_t i = 0; i < dims.vision_layers; ++i) addUnit(std::make_shared<QwenVisionBlock>(dims, i, layouts));
        addUnit(std::make_shared<QwenPatchMerger>(dims, layouts));
        const int64_t embedding = unitCount();
        addUnit(std::make_shared<QwenEmbedding>(dims));
        for (int64_t i = 0; i < dims.layers; ++i) addUnit(std::make_shared<QwenDecoderLayer>(dims, i));
        addUnit(std::make_shared<QwenHead>(dims));
        // tie_word_embeddings (the 3B): lm_head is embed_tokens (Model::ties()).
        if (dims.tie_embeddings) tie(embedding, "embed_tokens.weight", unitCount() - 1, "lm_head.weight");
    }
};

} // namespace parallax

#pragma once

#include "trainer/models/Model.h"
#include "trainer/models/QwenDecoderLayer.h"
#include "trainer/models/QwenText.h"

namespace parallax {

// Qwen2 / Qwen2.5 causal language model as published (docs/models.md, qwen2): embed_tokens,
// `layers` decoder layers, norm and lm_head. Units: QwenEmbedding | QwenDecoderLayer x L | QwenHead.
// With tie_word_embeddings the head's lm_head is a tied copy of embed_tokens.
class Qwen2Model : public Model {
public:
    explicit Qwen2Model(const ModelDims& dims) : Model(dims) {
        addUnit(std::make_shared<QwenEmbedding>(dims));
        for (int64_t i = 0; i < dims.layers; ++i) addUnit(std::make_shared<QwenDecoderLayer>(dims, i));
        addUnit(std::make_shared<QwenHead>(dims));
        // tie_word_embeddings: lm_head is embed_tokens (Model::ties()).
        if (dims.tie_embeddings) tie(0, "embed_tokens.weight", unitCount() - 1, "lm_head.weight");
    }
};

} // namespace parallax

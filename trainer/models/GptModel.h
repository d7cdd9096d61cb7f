#pragma once

#include "trainer/models/LmHead.h"
#include "trainer/models/Model.h"
#include "trainer/models/TokenEmbedding.h"
#include "trainer/models/TransformerBlock.h"

namespace parallax {

// Decoder LM (docs/models.md, gpt): embed, `layers` causal blocks, head.
class GptModel : public Model {
public:
    explicit GptModel(const ModelDims& dims) : Model(dims) {
        addUnit(std::make_shared<TokenEmbedding>(dims.vocab, dims.dim, dims.seq_len));
        TransformerBlock::Config block;
        block.dim = dims.dim;
        block.heads = dims.heads;
        block.ffn = dims.ffn;
        block.sequence = dims.seq_len;
        block.causal = true;
        block.depth = dims.layers;
        block.part = ModelPart::Language;
        for (int64_t i = 0; i < dims.layers; ++i) addUnit(std::make_shared<TransformerBlock>(block));
        addUnit(std::make_shared<LmHead>(dims.dim, dims.vocab));
    }
};

} // namespace parallax

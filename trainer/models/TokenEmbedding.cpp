#include "trainer/models/TokenEmbedding.h"

namespace parallax {

TokenEmbedding::TokenEmbedding(int64_t vocab, int64_t dim, int64_t seqLen) {
    tok = register_module("tok", std::make_shared<Embedding>(vocab, dim));
    pos = register_parameter("pos", torch::empty({seqLen, dim}));
}

Activation TokenEmbedding::forward(const Activation& /*in*/, const Batch& batch) {
    const int64_t t = batch.tokens.size(1) - 1;
    torch::Tensor inputs = batch.tokens.narrow(1, 0, t);    // (B, T)
    return {tok->forward(inputs) + pos.narrow(0, 0, t)};      // (B, T, C)
}

} // namespace parallax

#include "trainer/models/LmHead.h"

#include "trainer/ops/CrossEntropy.h"
#include "trainer/ops/LayerNorm.h"
#include "trainer/models/Layers.h"

namespace parallax {

LmHead::LmHead(int64_t dim, int64_t vocab) {
    ln = register_module("ln", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
    out = register_module("out", std::make_shared<Linear>(dim, vocab, false, kInitStd));
}

torch::Tensor LmHead::logits(const torch::Tensor& x, int64_t textTokens) {
    // Only the positions that predict a label are projected: the vocabulary product dominates.
    return out->forward(layerNorm(*ln, x.narrow(1, 0, textTokens))); // (B, T, V)
}

Activation LmHead::forward(const Activation& in, const Batch& batch) {
    torch::Tensor labels = batch.tokens.narrow(1, 1, batch.tokens.size(1) - 1); // (B, T)
    torch::Tensor l = logits(in.at(0), labels.size(1)); // (B, T, V), bf16 under mixed precision
    torch::Tensor flatLogits = l.reshape({-1, l.size(-1)}); // (B*T, V)
    torch::Tensor flatLabels = labels.reshape({-1});         // (B*T)
    // The logits stay in their dtype on the fused CUDA path; the others compute in float32.
    torch::Tensor lossSum = loss ? loss(flatLogits.to(torch::kFloat32), flatLabels)
                                 : crossEntropySum(flatLogits, flatLabels, /*ignoreIndex=*/-1);
    torch::Tensor count = labels.ge(0).sum().to(torch::kFloat32);
    return {lossSum, count};
}

} // namespace parallax

#include "trainer/models/QwenText.h"

#include "core/spec/Choice.h"
#include "trainer/models/Layers.h"
#include "trainer/ops/CrossEntropy.h"

#include <stdexcept>

namespace parallax {

QwenEmbedding::QwenEmbedding(const ModelDims& dims) : m_dims(dims) {
    embed_tokens = register_module("embed_tokens", std::make_shared<Embedding>(dims.vocab, dims.dim));
}

Activation QwenEmbedding::forward(const Activation& in, const Batch& batch) {
    const torch::Tensor inputs =
        batch.labels.defined() ? batch.tokens : batch.tokens.narrow(1, 0, batch.tokens.size(1) - 1); // (B, T)
    const torch::Tensor x = embed_tokens->forward(inputs); // (B, T, C)
    if (in.empty()) return {x};
    const torch::Tensor& features = in.at(0); // (N, C)
    const torch::Tensor pads = inputs.eq(m_dims.tokens.image_pad);
    const int64_t count = pads.sum().item<int64_t>();
    if (count != features.size(0))
        throw std::invalid_argument("the batch has " + std::to_string(count) + " <|image_pad|> tokens but its images give " +
                                    std::to_string(features.size(0)) + " features");
    // No image here: the features (empty) still reach x, at zero, so that a backward runs through the
    // tower on this rank too (reachingParameters).
    if (count == 0) return {features.requires_grad() ? x + features.sum().to(x.scalar_type()) : x};
    if (!batch.positions.defined() || batch.positions.dim() != 3)
        throw std::invalid_argument("a " + choiceName(m_dims.kind) +
                                    " batch with images needs M-RoPE positions (3, B, T) (findImageTokens)");
    return {x.masked_scatter(pads.unsqueeze(-1).expand_as(x), features.to(x.scalar_type()))};
}

QwenHead::QwenHead(const ModelDims& dims) {
    norm = register_module("norm", std::make_shared<RmsNorm>(dims.dim, dims.rms_eps));
    lm_head = register_module("lm_head", std::make_shared<Linear>(dims.dim, dims.vocab, false, kInitStd));
    lm_head->split = TensorSplit::Vocab;
}

std::pair<torch::Tensor, torch::Tensor> QwenHead::logitsAndLabels(const torch::Tensor& x, const Batch& batch) {
    if (!batch.labels.defined()) { // next-token text: every position predicts the token after it
        const torch::Tensor labels = batch.tokens.narrow(1, 1, batch.tokens.size(1) - 1);
        return {lm_head->forward(norm->forward(x)), labels};
    }
    const int64_t t = x.size(1) - 1;
    const torch::Tensor labels = batch.labels.narrow(1, 1, t);                     // (B, T-1)
    return {lm_head->forward(norm->forward(x.narrow(1, 0, t))), labels}; // (B, T-1, V)
}

Activation QwenHead::forward(const Activation& in, const Batch& batch) {
    const auto [logits, labels] = logitsAndLabels(in.at(0), batch);
    const torch::Tensor flatLogits = logits.reshape({-1, logits.size(-1)}); // (N, V)
    const torch::Tensor flatLabels = labels.reshape({-1}).to(logits.device());
    // Every negative label is ignored (-100 as Hugging Face writes it, -1 as the look-alikes do).
    const torch::Tensor kept = flatLabels.lt(0).logical_not();
    const torch::Tensor ignored = flatLabels.masked_fill(kept.logical_not(), -1);
    const torch::Tensor lossSum = loss ? loss(flatLogits.to(torch::kFloat32), ignored)
                                       : crossEntropySum(flatLogits, ignored, /*ignoreIndex=*/-1);
    return {lossSum, kept.sum().to(torch::kFloat32)};
}

} // namespace parallax

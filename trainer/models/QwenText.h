#pragma once

#include "core/spec/ModelDims.h"
#include "trainer/models/Embedding.h"
#include "trainer/models/RmsNorm.h"
#include "trainer/models/VocabHead.h"

namespace parallax {

// The first unit of the Qwen language models: embed_tokens (V, C), a vocabulary tensor parallelism
// splits. Its input: batch.tokens (B, T) when the batch brings labels of its own (conversations),
// else the first T of (B, T+1) (next-token text). In qwen2_5_vl it follows the vision tower: the
// image features it receives, {features (N, C)}, replace the embeddings of the N <|image_pad|>
// tokens in order, and the batch must bring M-RoPE positions (findImageTokens). Activation out:
// {x (B, T, C)}.
class QwenEmbedding : public Unit {
public:
    explicit QwenEmbedding(const ModelDims& dims);
    Activation forward(const Activation& in, const Batch& batch) override;
    std::string kindName() const override { return "embed"; }
    std::string publishedName(const std::string& local) const override { return "model." + local; }
    std::optional<ModelPart> partOf(const std::string&) const override { return ModelPart::Language; }

    std::shared_ptr<Embedding> embed_tokens;

private:
    ModelDims m_dims;
};

// The last unit: norm (RMSNorm) and lm_head (C -> V, no bias), then the cross-entropy summed over
// the labelled positions. Labels: batch.labels (B, T), aligned with the tokens and shifted here
// (position i predicts label i + 1, as the published models train; negative labels ignored), or
// the last T of batch.tokens (B, T+1) for next-token text. Activation in: {x (B, T, C)}; out:
// {loss_sum, loss_count}.
class QwenHead : public VocabHead {
public:
    explicit QwenHead(const ModelDims& dims);
    Activation forward(const Activation& in, const Batch& batch) override;
    std::string kindName() const override { return "head"; }
    std::optional<ModelPart> partOf(const std::string&) const override { return ModelPart::Language; }
    Linear& vocabProjection() override { return *lm_head; }
    std::string publishedName(const std::string& local) const override {
        return local.rfind("lm_head.", 0) == 0 ? local : "model." + local;
    }

    // Logits (B, T', V) of the positions that predict a label, and those labels (B, T').
    std::pair<torch::Tensor, torch::Tensor> logitsAndLabels(const torch::Tensor& x, const Batch& batch);

    std::shared_ptr<RmsNorm> norm;
    std::shared_ptr<Linear> lm_head;
};

} // namespace parallax

#include "tests/trainer/models/ModelTestSupport.h"
#include "trainer/compat/TorchCompat.h"
#include "trainer/models/LmHead.h"

#include <gtest/gtest.h>

namespace parallax {
namespace {

using test::batchOf;
using test::dimsOf;

// The activation entering unit `stop` (all units before it run).
Activation runUntil(Model& model, const Batch& batch, int64_t stop) {
    Activation a;
    for (int64_t i = 0; i < stop; ++i) a = model.unit(i)->forward(a, batch);
    return a;
}

// Logits (B, T, V) of the LM head: position i predicts label i.
torch::Tensor headLogits(Model& model, const Batch& batch) {
    const int64_t last = model.unitCount() - 1;
    auto head = std::dynamic_pointer_cast<LmHead>(model.unit(last));
    const int64_t t = batch.tokens.size(1) - 1;
    return head->logits(runUntil(model, batch, last).at(0), t);
}

// Whether each position's values (dim 1 of a (B, S, ...) tensor) differ between a and b.
std::vector<bool> changedPositions(const torch::Tensor& a, const torch::Tensor& b) {
    std::vector<bool> changed;
    for (int64_t i = 0; i < a.size(1); ++i)
        changed.push_back(!torch::allclose(a.select(1, i), b.select(1, i), 0.0, 1e-6));
    return changed;
}

TEST(ModelMasking, GptPredictionsIgnoreLaterTokens) {
    const ModelDims dims = dimsOf("gpt", "tiny");
    auto model = buildModel(dims, 21);
    torch::NoGradGuard noGrad;
    Batch batch = batchOf(dims, 2);
    const torch::Tensor before = headLogits(*model, batch); // (B, T, V)
    const int64_t j = dims.seq_len / 2;
    batch.tokens = batch.tokens.clone();
    batch.tokens.index_put_({torch::indexing::Slice(), j}, (batch.tokens.select(1, j) + 1).remainder(dims.vocab));
    const std::vector<bool> changed = changedPositions(before, headLogits(*model, batch));
    for (int64_t i = 0; i < dims.seq_len; ++i) EXPECT_EQ(changed[static_cast<size_t>(i)], i >= j) << "position " << i;
}

// qwen_image's joint attention after its first block: every image token sees the last prompt state
// a sample has, every prompt state sees the image, and a state past the prompt's end (padding, off
// the mask) is seen by nothing: not by the image, not by the prompt's own states.
TEST(ModelMasking, QwenImageStreamsAttendJointlyAndPaddingIsMasked) {
    const ModelDims dims = dimsOf("qwen_image", "tiny");
    auto model = buildModel(dims, 24);
    torch::NoGradGuard noGrad;
    int64_t shortest = -1;
    Batch batch;
    for (int64_t first = 0; first < 16 && shortest < 0; ++first) { // two samples whose prompts differ in length
        batch = batchOf(dims, 2, first);
        ASSERT_TRUE(batch.attention_mask.defined() || first < 15);
        if (!batch.attention_mask.defined()) continue;
        const torch::Tensor lengths = batch.attention_mask.sum(1);
        if (lengths[0].item<int64_t>() != lengths[1].item<int64_t>())
            shortest = lengths[0].item<int64_t>() < lengths[1].item<int64_t>() ? 0 : 1;
    }
    ASSERT_GE(shortest, 0) << "no two synthetic prompts of different lengths";
    const int64_t length = batch.attention_mask[shortest].sum().item<int64_t>();
    const Activation before = runUntil(*model, batch, 2); // {text, image, temb} after the first block
    const auto row = [&](const torch::Tensor& t) { return t.narrow(0, shortest, 1); };

    Batch lastState = batch;
    lastState.text_states = batch.text_states.clone();
    lastState.text_states[shortest][length - 1].add_(5.0);
    const Activation a = runUntil(*model, lastState, 2);
    for (bool c : changedPositions(row(before[1]), row(a[1]))) EXPECT_TRUE(c); // every image token sees it

    Batch otherImage = batch; // another image for the sample (one latent moves the text by under 1e-6)
    otherImage.images = batch.images.clone();
    otherImage.images[shortest].mul_(-1.0);
    const Activation b = runUntil(*model, otherImage, 2);
    const std::vector<bool> text = changedPositions(row(before[0]), row(b[0]));
    for (int64_t i = 0; i < length; ++i) EXPECT_TRUE(text[static_cast<size_t>(i)]) << "prompt state " << i;

    Batch padded = batch;
    padded.text_states = batch.text_states.clone();
    padded.text_states[shortest][length].add_(5.0);
    const Activation c = runUntil(*model, padded, 2);
    for (bool changed : changedPositions(row(before[1]), row(c[1]))) EXPECT_FALSE(changed);
    const std::vector<bool> others = changedPositions(row(before[0]), row(c[0]));
    for (int64_t i = 0; i < length; ++i) EXPECT_FALSE(others[static_cast<size_t>(i)]) << "prompt state " << i;
}

} // namespace
} // namespace parallax

// qwen2_5_vl started from a published folder (the reference's tiny checkpoint with Qwen's real
// tokenizer.json) and trained on conversations with images of odd sizes, multi-turn and text-only:
// each layout trains the same losses and weights as one process, for a full fine-tune of the
// language model with the tower frozen and for LoRA.

#include "tests/trainer/support/CheckpointCompare.h"
#include "tests/trainer/support/QwenData.h"
#include "tests/trainer/support/SpecText.h"
#include "tests/trainer/support/WorkerRun.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace parallax;
using namespace parallax::testing;

namespace {

struct QwenLayout {
    const char* name;
    int64_t dp, tp, pp, zero;
    bool lora;
    bool tower = false; // the vision tower and merger train too
    bool tied = false;  // lm_head tied to embed_tokens (QwenData::tiedFolder)
    const char* schedule = "1f1b";
    bool recompute = false; // train.activation_checkpointing
};

void PrintTo(const QwenLayout& layout, std::ostream* os) { *os << layout.name; }

TinySpec qwenSpec(const QwenLayout& layout) {
    TinySpec s = qwenConversationSpec(layout.lora, layout.tied ? QwenData::get().tiedFolder() : "");
    if (layout.tower) s.finetune += "\nfreeze_vision = false\nfreeze_merger = false";
    s.dp = layout.dp;
    s.tp = layout.tp;
    s.pp = layout.pp;
    s.zero = layout.zero;
    s.schedule = layout.schedule;
    s.recompute = layout.recompute;
    return s;
}

const WorkerRun& oneProcess(const QwenLayout& layout) {
    const std::string key = std::string(layout.lora ? "one-lora" : "one-full") + (layout.tower ? "-tower" : "") +
                            (layout.tied ? "-tied" : "");
    return runOnce(key, [&layout](const std::string& dir) {
        TinySpec spec = qwenSpec({"one", 1, 1, 1, 0, layout.lora, layout.tower, layout.tied});
        spec.checkpointEvery = 3;
        return runWorker(spec.toToml(), 1, dir);
    });
}

// The head's copy of the embedding took the same updates on its stage: the two are equal.
void expectTiedCopiesEqual(const std::string& checkpoint) {
    CheckpointReader reader(checkpoint);
    std::string embedding, head;
    for (const std::string& name : reader.names("param")) {
        if (name.find(".embed_tokens.weight") != std::string::npos) embedding = name;
        if (name.find(".lm_head.weight") != std::string::npos) head = name;
    }
    ASSERT_FALSE(embedding.empty() || head.empty()) << checkpoint;
    const torch::Tensor source = reader.full(embedding, "param"), copy = reader.full(head, "param");
    EXPECT_TRUE(torch::equal(source, copy)) << (source - copy).abs().max().item<double>();
    EXPECT_TRUE(torch::equal(reader.full(embedding, "exp_avg_sq"), reader.full(head, "exp_avg_sq")));
}

class QwenLayoutEquivalence : public ::testing::TestWithParam<QwenLayout> {
protected:
    void SetUp() override {
        if (GetParam().tied) QwenData::get().tiedFolder();
        if (!QwenData::get().problem.empty()) GTEST_SKIP() << QwenData::get().problem;
    }
};

TEST_P(QwenLayoutEquivalence, SameLossesAndWeightsAsOneProcess) {
    const QwenLayout& layout = GetParam();
    const WorkerRun& one = oneProcess(layout);
    ASSERT_EQ(one.exitCode, 0) << one.output;
    ASSERT_EQ(one.losses().size(), 3u) << one.output;
    EXPECT_NE(one.output.find("conversations: 4 of 4 samples"), std::string::npos) << one.output;
    for (double loss : one.losses()) // the cross-entropy of random logits over 151,936 ids: about ln(151936) = 11.9
        EXPECT_TRUE(loss > 8 && loss < 16) << loss;
    TinySpec spec = qwenSpec(layout);
    spec.checkpointEvery = 3;
    TempDir tmp;
    const WorkerRun many = runWorker(spec.toToml(), static_cast<int>(layout.dp * layout.tp * layout.pp), tmp.path() + "/run");
    ASSERT_EQ(many.exitCode, 0) << many.output;
    ASSERT_EQ(many.losses().size(), 3u) << many.output;
    EXPECT_LT(maxRelativeDifference(one.losses(), many.losses()), 1e-5);
    // LoRA's A gets its first gradient at step 2, from B near zero: values of 1e-4 summed from
    // cancelling products, which tensor parallelism adds in another order (5e-5 apart, relative;
    // B's gradients agree to 6e-6). Adam's normalization makes whole steps of such values, so the
    // adapters' weights agree to 3.3e-5 of the largest weight after three steps under tp = 2.
    // (Relative to the largest weight, as the other layout tests measure.)
    // The keys' biases apart: their gradient is zero in exact arithmetic (a bias added to every key
    // shifts each query's scores alike, which softmax ignores), so what they get is rounding noise
    // that Adam makes whole steps of, in another order per layout (1.5e-5 of the largest weight
    // under dp2 x pp2 after three steps).
    auto keyBias = [](const std::string& name) { return name.find("k_proj.bias") != std::string::npos; };
    const WeightsDifference param = weightsDifference(one.lastCheckpoint(), many.lastCheckpoint(), "param",
                                                      [&](const std::string& n) { return !keyBias(n); });
    EXPECT_LT(param.relative, layout.lora ? 1e-4 : 1e-5) << param.where;
    const WeightsDifference keys = weightsDifference(one.lastCheckpoint(), many.lastCheckpoint(), "param", keyBias);
    EXPECT_LT(keys.relative, 1e-3) << keys.where;
    if (layout.tied) expectTiedCopiesEqual(many.lastCheckpoint());
}

// Each test is a process of its own under ctest, with its own one-process run: six cover data,
// tensor and pipeline parallelism, zb1 with recomputation, ZeRO-3 and LoRA (40 to 80 s each on two
// cores).
const QwenLayout kQwenLayouts[] = {
    {"dp2_zero3_full", 2, 1, 1, 3, false},
    // The tower trains under ZeRO-3, whose every unit gathers and reduce-scatters collectively; the
    // text-only conversation (sample 1) meets an image conversation of the other rank in the same
    // micro-batch: the rank without an image runs the tower on no patches, and nothing waits.
    {"dp2_zero3_tower", 2, 1, 1, 3, false, true},
    // lm_head tied to embed_tokens (the 3B): the first stage's embedding and the last stage's copy
    // add their ZeRO-2 gradient slices over the pipeline.
    {"dp2_pp2_zero2_tied", 2, 1, 2, 2, false, false, true},
    {"tp2_pp2_full", 1, 2, 2, 0, false},
    // The frozen base weights of a LoRA run, tensor-parallel slabs of them read from the folder.
    {"dp2_tp2_lora", 2, 2, 1, 0, true},
    // The tower training on the first stage, its blocks recomputed, zb1's backward split into input
    // and weight passes: images scattered into the text on one stage, their gradients sent back.
    {"pp2_zb1_recompute_tower", 1, 1, 2, 0, false, true, false, "zb1", true},
};

INSTANTIATE_TEST_SUITE_P(Layouts, QwenLayoutEquivalence, ::testing::ValuesIn(kQwenLayouts),
                         [](const auto& info) { return std::string(info.param.name); });

} // namespace

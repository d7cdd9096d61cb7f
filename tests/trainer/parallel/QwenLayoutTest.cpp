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
};

void PrintTo(const QwenLayout& layout, std::ostream* os) { *os << layout.name; }

TinySpec qwenSpec(const QwenLayout& layout) {
    TinySpec s = qwenConversationSpec(layout.lora);
    s.dp = layout.dp;
    s.tp = layout.tp;
    s.pp = layout.pp;
    s.zero = layout.zero;
    return s;
}

const WorkerRun& oneProcess(bool lora) {
    return runOnce(lora ? "one-lora" : "one-full", [lora](const std::string& dir) {
        TinySpec spec = qwenSpec({"one", 1, 1, 1, 0, lora});
        spec.checkpointEvery = 3;
        return runWorker(spec.toToml(), 1, dir);
    });
}

class QwenLayoutEquivalence : public ::testing::TestWithParam<QwenLayout> {
protected:
    void SetUp() override {
        if (!QwenData::get().problem.empty()) GTEST_SKIP() << QwenData::get().problem;
    }
};

TEST_P(QwenLayoutEquivalence, SameLossesAndWeightsAsOneProcess) {
    const QwenLayout& layout = GetParam();
    const WorkerRun& one = oneProcess(layout.lora);
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
    const WeightsDifference param = weightsDifference(one.lastCheckpoint(), many.lastCheckpoint(), "param");
    EXPECT_LT(param.relative, layout.lora ? 1e-4 : 1e-5) << param.where;
}

// Each test is a process of its own under ctest, with its own one-process run: three cover data,
// tensor and pipeline parallelism, ZeRO-3 and LoRA (40 to 80 s each on two cores).
const QwenLayout kQwenLayouts[] = {
    {"dp2_zero3_full", 2, 1, 1, 3, false},
    {"tp2_pp2_full", 1, 2, 2, 0, false},
    // The frozen base weights of a LoRA run, tensor-parallel slabs of them read from the folder.
    {"dp2_tp2_lora", 2, 2, 1, 0, true},
};

INSTANTIATE_TEST_SUITE_P(Layouts, QwenLayoutEquivalence, ::testing::ValuesIn(kQwenLayouts),
                         [](const auto& info) { return std::string(info.param.name); });

} // namespace

// Every layout the form offers must train exactly like one process with the same global batch and
// seed: losses step for step and the final weights.

#include "tests/trainer/support/CheckpointCompare.h"
#include "tests/trainer/support/SpecText.h"
#include "tests/trainer/support/WorkerRun.h"
#include "trainer/train/Checkpoint.h"

#include <gtest/gtest.h>

#include <regex>

using namespace parallax;
using namespace parallax::testing;

namespace {

struct Layout {
    const char* name;
    int64_t dp, tp, pp, zero;
    const char* schedule;
    int64_t virtualStages;
    bool recompute = false; // activation checkpointing
    int64_t recomputeBlocks = 0; // train.recompute_blocks
};

void PrintTo(const Layout& layout, std::ostream* os) {
    *os << layout.name;
}

const Layout kLayouts[] = {
    {"tp2", 1, 2, 1, 0, "1f1b", 1},
    {"pp2_gpipe", 1, 1, 2, 0, "gpipe", 1},
    {"pp2_1f1b", 1, 1, 2, 0, "1f1b", 1},
    {"pp2_interleaved", 1, 1, 2, 0, "interleaved", 2},
    {"dp2_zero1", 2, 1, 1, 1, "1f1b", 1},
    {"dp2_zero2", 2, 1, 1, 2, "1f1b", 1},
    {"dp2_zero3", 2, 1, 1, 3, "1f1b", 1},
    {"dp2_tp2", 2, 2, 1, 0, "1f1b", 1},
    {"dp2_pp2", 2, 1, 2, 0, "1f1b", 1},
    {"tp2_pp2", 1, 2, 2, 0, "1f1b", 1},
    {"dp2_tp2_pp2", 2, 2, 2, 0, "1f1b", 1},
    {"dp2_recompute", 2, 1, 1, 0, "1f1b", 1, true},
    {"tp2_pp2_recompute", 1, 2, 2, 0, "1f1b", 1, true},
    {"dp2_zero3_recompute", 2, 1, 1, 3, "1f1b", 1, true},
    {"pp2_zb1", 1, 1, 2, 0, "zb1", 1},
    {"dp2_pp2_zb1", 2, 1, 2, 0, "zb1", 1},
    {"pp2_zb1_recompute", 1, 1, 2, 0, "zb1", 1, true},
};

TinySpec baseSpec(const std::string& kind) {
    TinySpec s;
    s.kind = kind;
    // Enough blocks for two stages of two chunks (the VAE is one unit: its preset's residual blocks).
    s.layers = kind == "qwen_image_vae" ? 0 : 4;
    // qwen_image: latents of 10 x 10, an odd packed grid (5 x 5), with prompts of 8 to 16 states
    // padded to the longest of each micro-batch.
    if (kind == "qwen_image") s.extraModel = "image_size = 10\n";
    s.steps = 10;
    s.globalBatch = 8;
    s.microBatch = 2;
    return s;
}

// One single-process run per model kind, shared by every layout.
const WorkerRun& baseline(const std::string& kind) {
    return runOnce(kind + "-single", [&kind](const std::string& dir) { return runWorker(baseSpec(kind).toToml(), 1, dir); });
}

class LayoutEquivalence : public ::testing::TestWithParam<std::tuple<std::string, Layout>> {};

TEST_P(LayoutEquivalence, SameLossesAndWeightsAsOneProcess) {
    const auto& [kind, layout] = GetParam();
    const WorkerRun& one = baseline(kind);
    ASSERT_EQ(one.exitCode, 0) << one.output;
    ASSERT_EQ(one.losses().size(), 10u);

    TinySpec spec = baseSpec(kind);
    spec.dp = layout.dp;
    spec.tp = layout.tp;
    spec.pp = layout.pp;
    spec.zero = layout.zero;
    spec.schedule = layout.schedule;
    spec.virtualStages = layout.virtualStages;
    spec.recompute = layout.recompute;
    spec.recomputeBlocks = layout.recomputeBlocks;
    const int ranks = static_cast<int>(layout.dp * layout.tp * layout.pp);
    TempDir tmp;
    const WorkerRun many = runWorker(spec.toToml(), ranks, tmp.path() + "/run");
    ASSERT_EQ(many.exitCode, 0) << many.output;
    ASSERT_EQ(many.losses().size(), 10u) << many.output;
    EXPECT_LT(maxRelativeDifference(one.losses(), many.losses()), 1e-5);
    const WeightsDifference param = weightsDifference(one.lastCheckpoint(), many.lastCheckpoint(), "param");
    EXPECT_LT(param.relative, 1e-5) << param.where;
    const WeightsDifference moment = weightsDifference(one.lastCheckpoint(), many.lastCheckpoint(), "exp_avg");
    EXPECT_LT(moment.relative, 1e-4) << moment.where;
}

std::string layoutName(const ::testing::TestParamInfo<std::tuple<std::string, Layout>>& info) {
    return std::get<0>(info.param) + "_" + std::get<1>(info.param).name;
}

// qwen_image's last block's text stream leaves parameters without a gradient: every way of
// dividing the model must take them (buckets, ZeRO's shards, zb1's split backward, chunks).
INSTANTIATE_TEST_SUITE_P(Layouts, LayoutEquivalence,
                         ::testing::Combine(::testing::Values("gpt", "qwen_image"), ::testing::ValuesIn(kLayouts)),
                         layoutName);

// qwen_image_vae: one unit, whole on every rank; data parallelism and ZeRO spread it, and its time
// convolutions take no gradient.
const Layout kDataParallel[] = {
    {"dp2_zero1", 2, 1, 1, 1, "1f1b", 1},
    {"dp2_zero2", 2, 1, 1, 2, "1f1b", 1},
    {"dp2_zero3", 2, 1, 1, 3, "1f1b", 1},
};
INSTANTIATE_TEST_SUITE_P(Vae, LayoutEquivalence,
                         ::testing::Combine(::testing::Values("qwen_image_vae"), ::testing::ValuesIn(kDataParallel)),
                         layoutName);

// train.recompute_blocks: each stage's first block recomputed, its second keeping its activations.
const Layout kPartialRecompute[] = {
    {"pp2_recompute_one_block", 1, 1, 2, 0, "1f1b", 1, true, 1},
};

INSTANTIATE_TEST_SUITE_P(PartialRecompute, LayoutEquivalence,
                         ::testing::Combine(::testing::Values("qwen_image"), ::testing::ValuesIn(kPartialRecompute)),
                         layoutName);

TEST(Zero3, EachOfFourRanksHoldsAQuarterOfTheParameters) {
    TinySpec spec = baseSpec("gpt");
    spec.steps = 2;
    spec.dp = 4;
    spec.zero = 3;
    TempDir tmp;
    const WorkerRun run = runWorker(spec.toToml(), 4, tmp.path() + "/run");
    ASSERT_EQ(run.exitCode, 0) << run.output;
    const std::regex held("ZeRO-3: this rank holds ([0-9]+) of ([0-9]+) parameter values");
    int ranks = 0;
    for (const std::string& line : run.logs) {
        std::smatch m;
        if (!std::regex_search(line, m, held)) continue;
        ++ranks;
        const double fraction = std::stod(m[1]) / std::stod(m[2]);
        EXPECT_NEAR(fraction, 0.25, 0.01) << line;
    }
    EXPECT_EQ(ranks, 4);
}

} // namespace

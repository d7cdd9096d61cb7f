#include "core/spec/Estimates.h"
#include "core/spec/MachineInfo.h"
#include "core/spec/SpecIO.h"
#include "core/spec/SpecValidator.h"

#include "tests/core/spec/IssueText.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace parallax {
namespace {

constexpr int64_t kGiB = int64_t(1) << 30;

MachineInfo twoCores() {
    MachineInfo m;
    m.cores = 2;
    m.ram_bytes = 8 * kGiB;
    return m;
}

// gpt of 1536 blocks of width 32768: about 2 x 10^13 parameters, some 300 TiB of training state.
const char* kHugeModel = "[model]\npreset = \"custom\"\nlayers = 1536\ndim = 32768\nheads = 256\nffn = 131072\n";

TEST(MachineCheck, ALayoutThatFitsHasNoIssues) {
    const RunSpec s = parseSpec("[parallel]\ndp = 2\n");
    EXPECT_TRUE(validateSpec(s, twoCores()).empty()) << describe(validateSpec(s, twoCores()));
}

// Issue 17: parallel.dp = 100000 on this machine passed as "no problems found".
TEST(MachineCheck, TooManyRanksForTheCoresIsAnError) {
    const RunSpec s = parseSpec("[train]\nglobal_batch = 400000\n[parallel]\ndp = 100000\n");
    EXPECT_TRUE(validateSpec(s).empty()) << "without a machine nothing is checked against one";
    const auto issues = validateSpec(s, twoCores());
    EXPECT_TRUE(hasIssue(issues, "launch.target",
                         "launch.target = \"local\" starts 100000 ranks (parallel.dp * tp * pp) on this machine's 2 "
                         "cores, 50000 per core; at most 8 (4 per core) can share them",
                         false))
        << describe(issues);

    const auto nine = validateSpec(parseSpec("[train]\nglobal_batch = 36\n[parallel]\ndp = 9\n"), twoCores());
    EXPECT_TRUE(hasIssue(nine, "launch.target", "4+ per core", false)) << describe(nine);
    const auto four = validateSpec(parseSpec("[train]\nglobal_batch = 16\n[parallel]\ndp = 4\n"), twoCores());
    EXPECT_FALSE(hasErrors(four)) << describe(four);
    EXPECT_TRUE(hasIssue(four, "launch.target", "starts 4 ranks on this machine's 2 cores: they take turns", true))
        << describe(four);
}

TEST(MachineCheck, OtherTargetsAreNotCheckedAgainstThisMachine) {
    RunSpec s = parseSpec("[train]\nglobal_batch = 400000\n[parallel]\ndp = 100000\n[launch]\ntarget = \"slurm\"\n");
    EXPECT_TRUE(validateSpec(s, twoCores()).empty()) << describe(validateSpec(s, twoCores()));
    s = parseSpec(std::string(kHugeModel) + "[launch]\ntarget = \"hosts\"\nhosts = [\"a:1\"]\n");
    EXPECT_TRUE(validateSpec(s, twoCores()).empty()) << describe(validateSpec(s, twoCores()));
}

// Issue 17: launch.threads_per_rank = 1000000 passed.
TEST(MachineCheck, ThreadsPerRankAgainstTheCores) {
    const auto absurd = validateSpec(parseSpec("[launch]\nthreads_per_rank = 1000000\n"));
    EXPECT_TRUE(hasIssue(absurd, "launch.threads_per_rank", "is more than 4096 (2^12)", false)) << describe(absurd);

    const auto many = validateSpec(parseSpec("[parallel]\ndp = 2\n[launch]\nthreads_per_rank = 5\n"), twoCores());
    EXPECT_TRUE(hasIssue(many, "launch.threads_per_rank",
                         "launch.threads_per_rank = 5 x 2 ranks = 10 threads on this machine's 2 cores; use at most 1 "
                         "(cores / ranks)",
                         false))
        << describe(many);
    const auto some = validateSpec(parseSpec("[parallel]\ndp = 2\n[launch]\nthreads_per_rank = 2\n"), twoCores());
    EXPECT_FALSE(hasErrors(some)) << describe(some);
    EXPECT_TRUE(hasIssue(some, "launch.threads_per_rank", "= 4 threads on this machine's 2 cores: they take turns", true))
        << describe(some);
    EXPECT_TRUE(validateSpec(parseSpec("[launch]\nthreads_per_rank = 2\n"), twoCores()).empty());
}

// Issue 19: more ranks or threads than cores on a cpu run of this machine named no fix; the
// warning sits on the target and relates the fields that set the count.
TEST(MachineCheck, OversubscribedCoresNameTheNumbersAndTheFix) {
    const auto ranks = validateSpec(parseSpec("[train]\nglobal_batch = 24\n[parallel]\ndp = 3\n"), twoCores());
    EXPECT_FALSE(hasErrors(ranks)) << describe(ranks);
    EXPECT_TRUE(hasIssue(ranks, "launch.target",
                         "starts 3 ranks on this machine's 2 cores: they take turns on the cores (oversubscribed), so "
                         "every step is slower than the layout's figures suggest; use fewer processes (parallel.dp * "
                         "tp * pp of at most 2)",
                         true))
        << describe(ranks);
    for (const SpecIssue& i : ranks) {
        if (i.field != "launch.target") continue;
        for (const char* f : {"parallel.dp", "parallel.tp", "parallel.pp", "launch.processes"}) {
            EXPECT_NE(std::find(i.related.begin(), i.related.end(), f), i.related.end()) << f;
        }
    }

    // 2 ranks x 3 threads = 6 threads on 2 cores.
    const auto threads = validateSpec(parseSpec("[parallel]\ndp = 2\n[launch]\nthreads_per_rank = 3\n"), twoCores());
    EXPECT_TRUE(hasIssue(threads, "launch.threads_per_rank",
                         "launch.threads_per_rank = 3 x 2 ranks = 6 threads on this machine's 2 cores: they take turns "
                         "(oversubscribed), so every step runs slowly; use launch.threads_per_rank = 1 (cores / ranks) "
                         "or 0 to divide the cores among the ranks, or fewer processes",
                         true))
        << describe(threads);
    // The same layout on a machine of 8 cores fits; the count comes from the caller, not this machine.
    MachineInfo eight = twoCores();
    eight.cores = 8;
    EXPECT_TRUE(validateSpec(parseSpec("[parallel]\ndp = 2\n[launch]\nthreads_per_rank = 3\n"), eight).empty());
    // A cuda run's ranks wait on their GPUs but still share the cores: the same warning.
    const auto cuda =
        validateSpec(parseSpec("[train]\nglobal_batch = 24\n[parallel]\ndp = 3\n[launch]\ndevice = \"cuda\"\n"),
                     twoCores());
    EXPECT_TRUE(hasIssue(cuda, "launch.target", "they take turns on the cores", true)) << describe(cuda);
}

// Issue 17: a model of hundreds of TiB on cpu passed.
TEST(MachineCheck, TheMemoryEstimateAgainstRam) {
    const RunSpec huge = parseSpec(kHugeModel);
    ASSERT_TRUE(validateSpec(huge).empty()) << describe(validateSpec(huge));
    const double need = estimate(huge).memory.total();
    EXPECT_GT(need, 256.0 * 1024 * kGiB);
    const auto issues = validateSpec(huge, twoCores());
    EXPECT_TRUE(hasIssue(issues, "launch.device",
                         "launch.device = \"cpu\": the rank needs an estimated " + formatBytes(need) +
                             " of memory (see the estimates) and this machine has 8.0 GiB",
                         false))
        << describe(issues);

    // Every rank of a local cpu run shares the machine's memory.
    const RunSpec tiny = parseSpec("[parallel]\ndp = 2\n");
    const double pair = 2 * estimate(tiny).memory.total();
    MachineInfo small = twoCores();
    small.ram_bytes = static_cast<int64_t>(pair * 1.1);
    EXPECT_TRUE(hasIssue(validateSpec(tiny, small), "launch.device", "which leaves little", true));
    small.ram_bytes = static_cast<int64_t>(pair * 0.9);
    EXPECT_TRUE(hasIssue(validateSpec(tiny, small), "launch.device", "the 2 ranks need an estimated", false));
}

TEST(MachineCheck, GpuMemoryOnlyWhenKnown) {
    const RunSpec s = parseSpec(std::string(kHugeModel) + "[launch]\ndevice = \"cuda\"\n");
    ASSERT_TRUE(validateSpec(s).empty()) << describe(validateSpec(s));
    MachineInfo m = twoCores();
    EXPECT_TRUE(validateSpec(s, m).empty()) << "GPU memory unknown: not checked, and RAM is not a GPU's memory";
    m.gpu_memory_bytes = 80 * kGiB;
    const auto issues = validateSpec(s, m);
    EXPECT_TRUE(hasIssue(issues, "launch.device", "of GPU memory and a GPU here has 80.0 GiB", false)) << describe(issues);
}

// A spec that does not fit a GPU is told the fewest blocks train.recompute_blocks may recompute for
// the estimate to leave room for LibTorch and NCCL: Qwen-Image's 20B LoRA at 1024 x 1024 on a GPU of
// 64 GiB, which it overflows without checkpointing.
TEST(MachineCheck, TooLittleGpuMemoryNamesTheFewestBlocksToRecompute) {
    const std::string text = "[model]\nkind = \"qwen_image\"\npreset = \"20b\"\n[finetune]\nmode = \"lora\"\n"
                             "lora_r = 32\nlora_alpha = 32.0\n[data]\nkind = \"synthetic\"\n[train]\nglobal_batch = 4\n"
                             "micro_batch = 1\nprecision = \"bf16\"\n[launch]\ndevice = \"cuda\"\n";
    RunSpec s = parseSpec(text);
    ASSERT_TRUE(validateSpec(s).empty()) << describe(validateSpec(s));
    MachineInfo m = twoCores();
    m.gpu_memory_bytes = 64 * kGiB;
    const double budget = 0.8 * 64 * kGiB; // what leaves room for LibTorch and NCCL
    const auto recomputing = [s](int64_t n) {
        RunSpec r = s;
        r.train.activation_checkpointing = true;
        r.train.recompute_blocks = n;
        return estimate(r).memory.total();
    };
    int64_t fewest = 0;
    for (int64_t n = 1; n <= 60 && !fewest; ++n)
        if (recomputing(n) <= budget) fewest = n;
    ASSERT_GT(fewest, 1) << "recomputing a single block already fits";
    ASSERT_LT(fewest, 60);
    const std::string advice = "train.activation_checkpointing with train.recompute_blocks = " + std::to_string(fewest) +
                               " fits (an estimated " + formatBytes(recomputing(fewest)) + "), or shard the model";
    EXPECT_TRUE(hasIssue(validateSpec(s, m), "launch.device", advice, false)) << describe(validateSpec(s, m));

    // Recomputing too few blocks: the same advice; every block already: none, only the other fixes.
    s.train.activation_checkpointing = true;
    s.train.recompute_blocks = 1;
    EXPECT_TRUE(hasIssue(validateSpec(s, m), "launch.device", advice, false)) << describe(validateSpec(s, m));
    m.gpu_memory_bytes = 40 * kGiB; // less than the weights: nothing recomputed fits
    for (int64_t n : {int64_t(1), int64_t(0)}) {
        s.train.recompute_blocks = n;
        const auto issues = validateSpec(s, m);
        EXPECT_TRUE(hasIssue(issues, "launch.device", "; shard the model (parallel.zero, tp, pp)", false))
            << describe(issues);
        EXPECT_FALSE(hasIssue(issues, "launch.device", "recompute_blocks =", false)) << describe(issues);
    }
}

TEST(MachineCheck, AnUnknownMachineChecksNothing) {
    const RunSpec s = parseSpec(std::string(kHugeModel) + "[train]\nglobal_batch = 400000\n[parallel]\ndp = 100000\n");
    EXPECT_TRUE(validateSpec(s, MachineInfo{}).empty()) << describe(validateSpec(s, MachineInfo{}));
}

TEST(MachineCheck, ThisMachineIsRead) {
    const MachineInfo m = thisMachine();
    EXPECT_GE(m.cores, 1);
    EXPECT_GT(m.ram_bytes, 64 * (int64_t(1) << 20));
    EXPECT_FALSE(m.gpu_memory_bytes.has_value());
}

} // namespace
} // namespace parallax

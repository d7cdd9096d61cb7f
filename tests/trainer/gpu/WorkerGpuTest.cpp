// parallax-worker on GPUs in bf16: every layout on two GPUs (NCCL), and the hybrid layouts on four,
// trains like one GPU with the same model, global batch and seed, within bf16 rounding; each rank
// runs on a GPU of its own. Layouts needing more GPUs than the host has are skipped.

#include "tests/trainer/support/WorkerRun.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>

using namespace parallax;
using namespace parallax::testing;

namespace {

// bf16 matrix products round differently when the work is split or reduced in another order.
constexpr double kTolerance = 2e-2;
constexpr int kSteps = 10;

struct GpuLayout {
    const char* name;
    int dp, tp, pp, zero;
    const char* schedule;
    int virtualStages = 1;
    const char* kind = "gpt";
    const char* reduceDtype = "fp32";
};

void PrintTo(const GpuLayout& layout, std::ostream* os) {
    *os << layout.name;
}

std::string gpuSpec(const GpuLayout& l) {
    std::ostringstream o;
    o << "name = \"gpu-" << l.name << "\"\n"
      << "[model]\nkind = \"" << l.kind << "\"\npreset = \"" << (std::string(l.kind) == "qwen_image" ? "tiny" : "small")
      << "\"\nlayers = 4\n"
      << "[data]\nkind = \"synthetic\"\n"
      << "[train]\nsteps = " << kSteps << "\nglobal_batch = 16\nmicro_batch = 4\nlr = 1e-3\nwarmup = 3\n"
      << "seed = 1234\ngrad_clip = 1.0\nprecision = \"bf16\"\ncheckpoint_every = 0\n"
      << "[parallel]\ndp = " << l.dp << "\ntp = " << l.tp << "\npp = " << l.pp << "\nzero = " << l.zero
      << "\nschedule = \"" << l.schedule << "\"\nvirtual_stages = " << l.virtualStages << "\nbucket_mb = 1\n"
      << "reduce_dtype = \"" << l.reduceDtype << "\"\n"
      << "[launch]\ntarget = \"local\"\ndevice = \"cuda\"\n"
      << "[telemetry]\ndevice_sample_ms = 1000\nspan_every = 0\n";
    return o.str();
}

std::string missingGpus(int needed) {
    if (!torch::cuda::is_available()) return "no CUDA device";
    const int count = static_cast<int>(torch::cuda::device_count());
    if (count < needed) return "needs " + std::to_string(needed) + " GPUs, this host has " + std::to_string(count);
    return "";
}

void prepareEnvironment() {
    // NVLink multicast stays off on shared machines; root may run mpirun in containers.
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
}

std::string runDir(const std::string& name) {
    return buildDir() + "/test-runs/gpu/" + name;
}

// One GPU per model kind, computed once for every comparison.
const WorkerRun& singleGpu(const char* kind = "gpt") {
    static std::mutex mutex;
    static std::map<std::string, std::unique_ptr<WorkerRun>> runs;
    std::lock_guard<std::mutex> lock(mutex);
    std::unique_ptr<WorkerRun>& run = runs[kind];
    if (!run) {
        prepareEnvironment();
        GpuLayout single{"single", 1, 1, 1, 0, "1f1b"};
        single.kind = kind;
        const std::string name = std::string("single-") + kind;
        run = std::make_unique<WorkerRun>(runWorker(gpuSpec(single), 1, runDir(name)));
    }
    return *run;
}

bool mentions(const WorkerRun& run, const std::string& text) {
    return run.output.find(text) != std::string::npos;
}

// gpt, and qwen_image with its bf16 streams through the fused adaLN kernels.
class WorkerGpuKind : public ::testing::TestWithParam<const char*> {};

TEST_P(WorkerGpuKind, OneGpuTrainsInBf16AndReportsThroughput) {
    const std::string missing = missingGpus(1);
    if (!missing.empty()) GTEST_SKIP() << missing;
    const WorkerRun& run = singleGpu(GetParam());
    ASSERT_EQ(run.exitCode, 0) << run.output;
    EXPECT_EQ(run.endStatus, "succeeded") << run.endReason;
    ASSERT_EQ(run.steps.size(), static_cast<size_t>(kSteps)) << run.output;
    EXPECT_LT(run.losses().back(), run.losses().front()) << "the loss should fall over " << kSteps << " steps";
    for (const StepEvent& s : run.steps) {
        EXPECT_GT(s.tokens_per_s, 0) << "step " << s.step;
        EXPECT_GT(s.mfu, 0) << "step " << s.step;
        EXPECT_GT(s.step_ms, 0) << "step " << s.step;
    }
    EXPECT_TRUE(mentions(run, "cuda:0")) << run.output;
}

INSTANTIATE_TEST_SUITE_P(Kinds, WorkerGpuKind, ::testing::Values("gpt", "qwen_image"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

// The probes' timings after the last step (parallax-cli balance and advise), in bf16 as the steps
// ran: every unit of the model (embedding, 4 blocks, head) and an all-reduce of every probe size.
TEST(WorkerGpu, TimesItsUnitsAndAllReducesInBf16AfterTheSteps) {
    const std::string missing = missingGpus(1);
    if (!missing.empty()) GTEST_SKIP() << missing;
    prepareEnvironment();
    GpuLayout single{"timed", 1, 1, 1, 0, "1f1b"};
    const WorkerRun run = runWorker(gpuSpec(single) + "unit_times = true\ncollective_times = true\n", 1, runDir("timed"));
    ASSERT_EQ(run.exitCode, 0) << run.output;
    EXPECT_EQ(run.endStatus, "succeeded") << run.endReason;
    ASSERT_EQ(run.unit_times.size(), 6u) << run.output;
    for (const UnitTimeEvent& u : run.unit_times) {
        EXPECT_GT(u.forward_ms, 0) << "unit " << u.unit << " (" << u.kind << ")";
        EXPECT_GT(u.backward_ms, 0) << "unit " << u.unit << " (" << u.kind << ")";
    }
    ASSERT_EQ(run.collective_times.size(), 4u) << run.output;
    for (const CollectiveTimeEvent& c : run.collective_times) {
        EXPECT_EQ(c.ranks, 1);
        EXPECT_GE(c.ms, 0) << c.bytes << " bytes";
    }
}

class WorkerGpuLayout : public ::testing::TestWithParam<GpuLayout> {};

TEST_P(WorkerGpuLayout, TrainsLikeOneGpu) {
    const GpuLayout& layout = GetParam();
    const int ranks = layout.dp * layout.tp * layout.pp;
    const std::string missing = missingGpus(ranks);
    if (!missing.empty()) GTEST_SKIP() << missing;
    const WorkerRun& single = singleGpu(layout.kind);
    ASSERT_EQ(single.exitCode, 0) << single.output;
    prepareEnvironment();
    const WorkerRun run = runWorker(gpuSpec(layout), ranks, runDir(layout.name));
    ASSERT_EQ(run.exitCode, 0) << run.output;
    EXPECT_EQ(run.endStatus, "succeeded") << run.endReason;
    ASSERT_EQ(run.losses().size(), single.losses().size()) << run.output;
    const double diff = maxRelativeDifference(run.losses(), single.losses());
    EXPECT_LT(diff, kTolerance) << layout.name << ": losses differ from one GPU by up to " << diff;
    // Each rank on its own GPU.
    for (int r = 0; r < ranks; ++r) EXPECT_TRUE(mentions(run, "cuda:" + std::to_string(r))) << "rank " << r;
}

INSTANTIATE_TEST_SUITE_P(Layouts, WorkerGpuLayout,
                         ::testing::Values(GpuLayout{"dp2", 2, 1, 1, 0, "1f1b"}, GpuLayout{"tp2", 1, 2, 1, 0, "1f1b"},
                                           GpuLayout{"pp2_1f1b", 1, 1, 2, 0, "1f1b"},
                                           GpuLayout{"pp2_gpipe", 1, 1, 2, 0, "gpipe"},
                                           GpuLayout{"dp2_zero3", 2, 1, 1, 3, "1f1b"},
                                           GpuLayout{"dp2_bf16_reduce", 2, 1, 1, 0, "1f1b", 1, "gpt", "bf16"},
                                           GpuLayout{"dp2_zero2_bf16_reduce", 2, 1, 1, 2, "1f1b", 1, "gpt", "bf16"},
                                           GpuLayout{"dp2_zero3_bf16_reduce", 2, 1, 1, 3, "1f1b", 1, "gpt", "bf16"},
                                           // qwen_image's bf16 stream through the fused adaLN kernels.
                                           GpuLayout{"qwen_image_dp2_zero3", 2, 1, 1, 3, "1f1b", 1, "qwen_image"},
                                           GpuLayout{"qwen_image_tp2", 1, 2, 1, 0, "1f1b", 1, "qwen_image"},
                                           // Four GPUs.
                                           GpuLayout{"dp2_tp2", 2, 2, 1, 0, "1f1b"},
                                           GpuLayout{"dp2_pp2", 2, 1, 2, 0, "1f1b"},
                                           GpuLayout{"tp2_pp2_1f1b", 1, 2, 2, 0, "1f1b"},
                                           GpuLayout{"tp2_pp2_interleaved", 1, 2, 2, 0, "interleaved", 2},
                                           GpuLayout{"qwen_image_dp4_zero3", 4, 1, 1, 3, "1f1b", 1, "qwen_image"}),
                         [](const ::testing::TestParamInfo<GpuLayout>& info) { return std::string(info.param.name); });

} // namespace

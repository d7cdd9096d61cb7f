// CUDA helpers of the worker on one GPU; every test skips with its reason where there is none.

#include <gtest/gtest.h>

#if PARALLAX_WITH_CUDA
#include "trainer/train/CudaSpanTimer.h"
#include "trainer/train/CudaSupport.h"

#include <ATen/cuda/Sleep.h>
#include <c10/cuda/CUDAFunctions.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#endif

namespace {

#if PARALLAX_WITH_CUDA

using namespace parallax;

#define REQUIRE_GPU()                                                           \
    do {                                                                        \
        if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";     \
    } while (0)

double wallSeconds() {
    using namespace std::chrono;
    return duration<double>(system_clock::now().time_since_epoch()).count();
}

// Sets (or, with nullopt, removes) environment variables for one scope.
class ScopedEnv {
public:
    explicit ScopedEnv(const std::map<std::string, std::optional<std::string>>& values) {
        for (const auto& [name, value] : values) {
            const char* old = std::getenv(name.c_str());
            m_saved[name] = old ? std::optional<std::string>(old) : std::nullopt;
            if (value) setenv(name.c_str(), value->c_str(), 1);
            else unsetenv(name.c_str());
        }
    }
    ~ScopedEnv() {
        for (const auto& [name, value] : m_saved) {
            if (value) setenv(name.c_str(), value->c_str(), 1);
            else unsetenv(name.c_str());
        }
    }

private:
    std::map<std::string, std::optional<std::string>> m_saved;
};

TEST(CudaSupport, LocalRankComesFromTheLaunchersEnvironment) {
    {
        ScopedEnv env({{"OMPI_COMM_WORLD_LOCAL_RANK", "3"}, {"SLURM_LOCALID", "1"}});
        EXPECT_EQ(localRank(), 3); // mpirun's variable wins inside an allocation
    }
    {
        ScopedEnv env({{"OMPI_COMM_WORLD_LOCAL_RANK", std::nullopt}, {"SLURM_LOCALID", "2"}});
        EXPECT_EQ(localRank(), 2);
    }
    {
        ScopedEnv env({{"OMPI_COMM_WORLD_LOCAL_RANK", std::nullopt},
                       {"SLURM_LOCALID", std::nullopt},
                       {"MPI_LOCALRANKID", std::nullopt},
                       {"LOCAL_RANK", std::nullopt}});
        EXPECT_EQ(localRank(), 0);
    }
}

TEST(CudaSupport, SelectsTheLocalRanksGpu) {
    REQUIRE_GPU();
    const torch::Device d = selectCudaDevice(0);
    EXPECT_TRUE(d.is_cuda());
    EXPECT_EQ(d.index(), 0);
    EXPECT_EQ(c10::cuda::current_device(), 0);
    EXPECT_FALSE(cudaDeviceName(0).empty());
}

TEST(CudaSupport, MoreLocalRanksThanGpusIsAClearError) {
    REQUIRE_GPU();
    const int count = static_cast<int>(torch::cuda::device_count());
    try {
        selectCudaDevice(count);
        FAIL() << "local rank " << count << " has no GPU of its own";
    } catch (const std::runtime_error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("this host has " + std::to_string(count) + " visible"), std::string::npos) << what;
        EXPECT_NE(what.find("ranks per host"), std::string::npos) << what;
    }
}

TEST(CudaSupport, PeakAllocatedFollowsTheCachingAllocator) {
    REQUIRE_GPU();
    const torch::Device d = selectCudaDevice(0);
    synchronize(d);
    resetPeakAllocated(d);
    const int64_t base = allocatedBytes(d);
    constexpr int64_t kBytes = 64 << 20;
    {
        auto big = torch::empty({kBytes / 4}, torch::TensorOptions().dtype(torch::kFloat).device(d));
        EXPECT_GE(allocatedBytes(d), base + kBytes);
    }
    EXPECT_EQ(allocatedBytes(d), base);
    EXPECT_GE(peakAllocatedBytes(d), base + kBytes);
    resetPeakAllocated(d);
    EXPECT_LT(peakAllocatedBytes(d), base + kBytes);
}

TEST(CudaSpanTimer, SpansCoverWhenTheGpuRanTheWork) {
    REQUIRE_GPU();
    const torch::Device d = selectCudaDevice(0);
    CudaSpanTimer timer(d);
    synchronize(d);
    const double before = wallSeconds();
    // About 20 ms each at the clock rates of current GPUs; the host queues both at once.
    const size_t a = timer.begin();
    at::cuda::sleep(40'000'000);
    timer.end(a);
    const size_t b = timer.begin();
    at::cuda::sleep(40'000'000);
    timer.end(b);
    const double queued = wallSeconds();
    synchronize(d);
    const double after = wallSeconds();
    const auto spans = timer.resolve();
    ASSERT_EQ(spans.size(), 2u);
    constexpr double kSlack = 2e-3; // clock read after an event completes
    EXPECT_GE(spans[0].first, before - kSlack);
    EXPECT_GT(spans[0].second, spans[0].first);
    EXPECT_GE(spans[1].first, spans[0].second - kSlack);
    EXPECT_LE(spans[1].second, after + kSlack);
    // The second span ended on the GPU well after the host had queued it.
    EXPECT_GT(spans[1].second, queued);

    timer.clear();
    EXPECT_EQ(timer.size(), 0u);
    timer.begin();
    EXPECT_THROW(timer.resolve(), std::logic_error);
}

#else

TEST(CudaSupport, NeedsACudaBuild) {
    GTEST_SKIP() << "built without CUDA (LibTorch without CUDA, or NCCL not found)";
}

#endif

} // namespace

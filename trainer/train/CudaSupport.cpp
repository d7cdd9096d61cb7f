#include "trainer/train/CudaSupport.h"

#include "trainer/comm/NcclCheck.h"

#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>

#include <cstdlib>
#include <stdexcept>

namespace parallax {

int localRank() {
    for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID", "LOCAL_RANK"})
        if (const char* v = std::getenv(var)) return std::atoi(v);
    return 0;
}

namespace {

std::string visibleDevicesNote() {
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    return visible ? std::string(" (CUDA_VISIBLE_DEVICES=") + visible + ")" : std::string();
}

} // namespace

torch::Device selectCudaDevice(int localRank) {
    int count = 0;
    const cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess || count == 0)
        throw std::runtime_error("launch.device = \"cuda\" but this host shows no CUDA device" + visibleDevicesNote() +
                                 (rc != cudaSuccess ? std::string(": ") + cudaGetErrorString(rc) : std::string()) +
                                 "; run on a GPU host or set launch.device = \"cpu\"");
    if (!torch::cuda::is_available())
        throw std::runtime_error("this host has " + std::to_string(count) +
                                 " CUDA device(s) but LibTorch's CUDA backend is not loaded; build the worker "
                                 "against a CUDA LibTorch (packaging/device)");
    if (localRank < 0 || localRank >= count)
        throw std::runtime_error("local rank " + std::to_string(localRank) + " needs GPU " + std::to_string(localRank) +
                                 " but this host has " + std::to_string(count) + " visible" + visibleDevicesNote() +
                                 "; start at most " + std::to_string(count) +
                                 " ranks per host (launch.hosts slots or Slurm's tasks per node)");
    const auto index = static_cast<c10::DeviceIndex>(localRank);
    c10::cuda::set_device(index);
    const torch::Device device(torch::kCUDA, index);
    // Creates the context and the caching allocator's state for the device now: its statistics
    // (peakAllocatedBytes) refuse a device it has not seen ("Invalid device argument").
    torch::empty({1}, torch::TensorOptions().device(device));
    return device;
}

std::string cudaDeviceName(int device) {
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    return prop.name;
}

void synchronize(const torch::Device& device) {
    if (!device.is_cuda()) return;
    c10::cuda::CUDAGuard guard(device.index());
    CUDA_CHECK(cudaDeviceSynchronize());
}

namespace {

// Index 0 of each statistic is the aggregate over the allocator's pools (small and large blocks).
constexpr size_t kAggregate = 0;

} // namespace

int64_t allocatedBytes(const torch::Device& device) {
    if (!device.is_cuda()) return 0;
    return c10::cuda::CUDACachingAllocator::getDeviceStats(device.index()).allocated_bytes[kAggregate].current;
}

int64_t peakAllocatedBytes(const torch::Device& device) {
    if (!device.is_cuda()) return 0;
    return c10::cuda::CUDACachingAllocator::getDeviceStats(device.index()).allocated_bytes[kAggregate].peak;
}

void resetPeakAllocated(const torch::Device& device) {
    if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
}

} // namespace parallax

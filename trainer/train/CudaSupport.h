#pragma once

// CUDA helpers for the worker: which GPU a rank uses, device names, synchronization and memory
// peaks. Only in builds with PARALLAX_WITH_CUDA (a CUDA LibTorch and NCCL); CudaSpanTimer times GPU
// work.

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace parallax {

// This process's rank among the ranks of its host, from the launcher's environment
// (OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID, MPI_LOCALRANKID, LOCAL_RANK); 0 when none is set.
int localRank();

// Makes GPU `localRank` current for this process and returns it. Throws a message naming the
// number of visible GPUs (and CUDA_VISIBLE_DEVICES) when there is no CUDA device or fewer GPUs than
// the local rank needs.
torch::Device selectCudaDevice(int localRank);

// "NVIDIA H200" and the like, for MFU peaks and telemetry.
std::string cudaDeviceName(int device);

// Blocks the host until all work queued on `device` (every stream) has completed.
void synchronize(const torch::Device& device);

// Bytes the caching allocator has handed out on `device`: now, and at the peak since the last
// resetPeakAllocated() (or the start of the process).
int64_t allocatedBytes(const torch::Device& device);
int64_t peakAllocatedBytes(const torch::Device& device);
void resetPeakAllocated(const torch::Device& device);

} // namespace parallax

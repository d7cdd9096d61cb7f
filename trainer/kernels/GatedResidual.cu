#include "trainer/kernels/GatedResidual.h"

#include "trainer/kernels/StreamElement.cuh"

#include <cuda_bf16.h>

#include <algorithm>

namespace parallax::kernels {
namespace {

constexpr int kThreads = 256;
// Rows one backward block sums for its columns; the blocks' sums are added in order afterwards.
constexpr int64_t kRowsPerSlice = 64;

__device__ __forceinline__ float roundBf16(float v) { return __bfloat162float(__float2bfloat16(v)); }

template <typename TS>
__global__ void forwardKernel(const TS* __restrict__ x, const __nv_bfloat16* __restrict__ branch,
                              const __nv_bfloat16* __restrict__ gate, int64_t gateStride, int64_t rowsPerGroup,
                              int64_t columns, int64_t n, TS* __restrict__ out) {
    for (int64_t i = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * kThreads) {
        const int64_t r = i / columns, c = i - r * columns;
        const float g = __bfloat162float(gate[(r / rowsPerGroup) * gateStride + c]);
        out[i] = narrowTo<TS>(widen(x[i]) + roundBf16(g * __bfloat162float(branch[i])));
    }
}

// Block (column tile, slice, group): thread t takes column tile * 256 + t over the slice's rows of
// the group, writes dbranch there and its sum of bf16(dout) * branch to partial[group][slice][c].
template <typename TS>
__global__ void backwardKernel(const TS* __restrict__ dout, const __nv_bfloat16* __restrict__ branch,
                               const __nv_bfloat16* __restrict__ gate, int64_t gateStride, int64_t rowsPerGroup,
                               int64_t columns, int slices, __nv_bfloat16* __restrict__ dbranch,
                               float* __restrict__ partial) {
    const int64_t c = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x;
    if (c >= columns) return;
    const int64_t group = blockIdx.z, slice = blockIdx.y;
    const float g = __bfloat162float(gate[group * gateStride + c]);
    const int64_t first = group * rowsPerGroup + slice * kRowsPerSlice;
    const int64_t groupEnd = (group + 1) * rowsPerGroup;
    const int64_t end = first + kRowsPerSlice < groupEnd ? first + kRowsPerSlice : groupEnd;
    float sum = 0.f;
    for (int64_t r = first; r < end; ++r) {
        const int64_t i = r * columns + c;
        const float d = roundBf16(widen(dout[i]));
        dbranch[i] = __float2bfloat16(d * g);
        sum += roundBf16(d * __bfloat162float(branch[i]));
    }
    partial[(group * slices + slice) * columns + c] = sum;
}

__global__ void sumSlicesKernel(const float* __restrict__ partial, int slices, int64_t columns,
                                __nv_bfloat16* __restrict__ dgate) {
    const int64_t c = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x;
    if (c >= columns) return;
    const int64_t group = blockIdx.y;
    float sum = 0.f;
    for (int s = 0; s < slices; ++s) sum += partial[(group * slices + s) * columns + c];
    dgate[group * columns + c] = __float2bfloat16(sum);
}

int slicesOf(int64_t rowsPerGroup) {
    return static_cast<int>(std::max<int64_t>(1, (rowsPerGroup + kRowsPerSlice - 1) / kRowsPerSlice));
}

bool valid(int64_t rows, int64_t columns, int64_t groups) {
    return rows >= 0 && columns > 0 && groups > 0 && groups <= 65535 && rows % groups == 0 &&
           slicesOf(rows / groups) <= 65535;
}

} // namespace

cudaError_t gatedResidualForward(const void* x, StreamType type, const void* branchBf16, const void* gateBf16,
                                 int64_t gateStride, int64_t rows, int64_t columns, int64_t groups, void* out,
                                 cudaStream_t stream) {
    if (!valid(rows, columns, groups)) return cudaErrorInvalidValue;
    const int64_t n = rows * columns;
    if (n == 0) return cudaSuccess;
    const int64_t blocks = std::min<int64_t>((n + kThreads - 1) / kThreads, 65536);
    return forStreamType(type, [&](auto element) {
        using TS = decltype(element);
        forwardKernel<TS><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
            static_cast<const TS*>(x), static_cast<const __nv_bfloat16*>(branchBf16),
            static_cast<const __nv_bfloat16*>(gateBf16), gateStride, rows / groups, columns, n, static_cast<TS*>(out));
        return cudaGetLastError();
    });
}

int64_t gatedResidualBackwardScratch(int64_t rows, int64_t columns, int64_t groups) {
    if (groups <= 0) return 0;
    return groups * static_cast<int64_t>(slicesOf(rows / groups)) * columns;
}

cudaError_t gatedResidualBackward(const void* dout, StreamType type, const void* branchBf16, const void* gateBf16,
                                  int64_t gateStride, int64_t rows, int64_t columns, int64_t groups, void* dbranchBf16,
                                  void* dgateBf16, float* partial, cudaStream_t stream) {
    if (!valid(rows, columns, groups)) return cudaErrorInvalidValue;
    const int slices = slicesOf(rows / groups);
    const unsigned tiles = static_cast<unsigned>((columns + kThreads - 1) / kThreads);
    const dim3 grid(tiles, static_cast<unsigned>(slices), static_cast<unsigned>(groups));
    cudaError_t e = forStreamType(type, [&](auto element) {
        using TS = decltype(element);
        backwardKernel<TS><<<grid, kThreads, 0, stream>>>(
            static_cast<const TS*>(dout), static_cast<const __nv_bfloat16*>(branchBf16),
            static_cast<const __nv_bfloat16*>(gateBf16), gateStride, rows / groups, columns, slices,
            static_cast<__nv_bfloat16*>(dbranchBf16), partial);
        return cudaGetLastError();
    });
    if (e != cudaSuccess) return e;
    sumSlicesKernel<<<dim3(tiles, static_cast<unsigned>(groups)), kThreads, 0, stream>>>(
        partial, slices, columns, static_cast<__nv_bfloat16*>(dgateBf16));
    return cudaGetLastError();
}

} // namespace parallax::kernels

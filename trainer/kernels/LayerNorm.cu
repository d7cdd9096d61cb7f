#include "trainer/kernels/LayerNorm.h"

#include "trainer/kernels/StreamElement.cuh"

#include <cuda_bf16.h>

#include <algorithm>

namespace parallax::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
// Blocks of the backward pass; each sums the weight and bias gradients of its rows, then one more
// pass adds the blocks' sums.
constexpr int kBackwardBlocks = 1024;

// Sums of two values over the block; every thread gets them.
__device__ __forceinline__ float2 blockSum(float2 v) {
    __shared__ float2 warps[kWarps];
    __shared__ float2 total;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int offset = 16; offset > 0; offset /= 2) {
        v.x += __shfl_xor_sync(0xffffffffu, v.x, offset);
        v.y += __shfl_xor_sync(0xffffffffu, v.y, offset);
    }
    if (lane == 0) warps[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float2 w = lane < kWarps ? warps[lane] : make_float2(0.f, 0.f);
        for (int offset = 16; offset > 0; offset /= 2) {
            w.x += __shfl_xor_sync(0xffffffffu, w.x, offset);
            w.y += __shfl_xor_sync(0xffffffffu, w.y, offset);
        }
        if (lane == 0) total = w;
    }
    __syncthreads();
    const float2 out = total;
    __syncthreads(); // the shared slots are reused by the next call
    return out;
}

// One block per row; thread t holds columns t, t + 256, ... (kPer of them) in registers.
// With a branch, the row normalized is x + branch (rounded to the stream's type), written to `added`.
template <int kPer, typename TS>
__global__ void forwardKernel(const TS* __restrict__ x, const __nv_bfloat16* __restrict__ branch,
                              TS* __restrict__ added, const float* __restrict__ weight,
                              const float* __restrict__ bias, int64_t columns, int64_t rowsPerGroup, float eps,
                              __nv_bfloat16* __restrict__ y, float* __restrict__ mean, float* __restrict__ rstd) {
    const int64_t row = blockIdx.x;
    const TS* xr = x + row * columns;
    const int64_t affine = (row / rowsPerGroup) * columns; // this row's group's weight and bias
    float v[kPer];
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
        const int64_t c = threadIdx.x + static_cast<int64_t>(i) * kThreads;
        v[i] = c < columns ? widen(xr[c]) : 0.f;
        if (branch != nullptr && c < columns) {
            v[i] = roundTo<TS>(v[i] + __bfloat162float(branch[row * columns + c]));
            added[row * columns + c] = narrowTo<TS>(v[i]);
        }
        sum += v[i];
    }
    const float mu = blockSum(make_float2(sum, 0.f)).x / static_cast<float>(columns);
    float sq = 0.f;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
        const int64_t c = threadIdx.x + static_cast<int64_t>(i) * kThreads;
        const float d = c < columns ? v[i] - mu : 0.f;
        sq += d * d;
    }
    const float r = rsqrtf(blockSum(make_float2(sq, 0.f)).x / static_cast<float>(columns) + eps);
    __nv_bfloat16* yr = y + row * columns;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
        const int64_t c = threadIdx.x + static_cast<int64_t>(i) * kThreads;
        if (c < columns) yr[c] = __float2bfloat16((v[i] - mu) * r * weight[affine + c] + bias[affine + c]);
    }
    if (threadIdx.x == 0) {
        mean[row] = mu;
        rstd[row] = r;
    }
}

// Block b takes group g = b / blocksPerGroup and that group's rows l, l + blocksPerGroup, ... (l = b
// % blocksPerGroup): dx per row; this block's sums of dy * xhat and dy per column go to partial[b]
// (weight) and partial[gridDim.x + b] (bias).
// With a residual gradient, dx is it plus the LayerNorm's; with dxBf16, dx is written there in bf16
// too. x, the residual gradient and dx are of the stream's type.
template <int kPer, typename TS>
__global__ void backwardKernel(const __nv_bfloat16* __restrict__ dy, const TS* __restrict__ x,
                               const float* __restrict__ weight, const float* __restrict__ mean,
                               const float* __restrict__ rstd, int64_t rowsPerGroup, int blocksPerGroup,
                               int64_t columns, const TS* __restrict__ residual, TS* __restrict__ dx,
                               __nv_bfloat16* __restrict__ dxBf16, float* __restrict__ partial) {
    const int64_t group = blockIdx.x / blocksPerGroup;
    const int64_t first = group * rowsPerGroup, end = first + rowsPerGroup;
    const float* wg = weight + group * columns;
    float w[kPer], dw[kPer], db[kPer];
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
        const int64_t c = threadIdx.x + static_cast<int64_t>(i) * kThreads;
        w[i] = c < columns ? wg[c] : 0.f;
        dw[i] = 0.f;
        db[i] = 0.f;
    }
    const float invColumns = 1.f / static_cast<float>(columns);
    for (int64_t row = first + blockIdx.x % blocksPerGroup; row < end; row += blocksPerGroup) {
        const float mu = mean[row], r = rstd[row];
        const TS* xr = x + row * columns;
        const __nv_bfloat16* gr = dy + row * columns;
        float xhat[kPer], g[kPer];
        float2 sums = make_float2(0.f, 0.f); // sum of w dy, sum of w dy xhat
#pragma unroll
        for (int i = 0; i < kPer; ++i) {
            const int64_t c = threadIdx.x + static_cast<int64_t>(i) * kThreads;
            const bool in = c < columns;
            xhat[i] = in ? (widen(xr[c]) - mu) * r : 0.f;
            g[i] = in ? __bfloat162float(gr[c]) : 0.f;
            const float wg = w[i] * g[i];
            sums.x += wg;
            sums.y += wg * xhat[i];
            dw[i] += g[i] * xhat[i];
            db[i] += g[i];
        }
        sums = blockSum(sums);
        const float a = sums.x * invColumns, b = sums.y * invColumns;
        const int64_t base = row * columns;
#pragma unroll
        for (int i = 0; i < kPer; ++i) {
            const int64_t c = threadIdx.x + static_cast<int64_t>(i) * kThreads;
            if (c < columns) {
                float d = r * (w[i] * g[i] - a - xhat[i] * b);
                if (residual != nullptr) d += widen(residual[base + c]);
                dx[base + c] = narrowTo<TS>(d);
                if (dxBf16 != nullptr) dxBf16[base + c] = __float2bfloat16(d);
            }
        }
    }
    float* pw = partial + static_cast<int64_t>(blockIdx.x) * columns;
    float* pb = partial + static_cast<int64_t>(gridDim.x + blockIdx.x) * columns;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
        const int64_t c = threadIdx.x + static_cast<int64_t>(i) * kThreads;
        if (c < columns) {
            pw[c] = dw[i];
            pb[c] = db[i];
        }
    }
}

// dweight[g][c] = sum over group g's blocks of partial[b][c] (blockIdx.y = g), dbias likewise from the
// second half (blockIdx.y = groups + g). A block of kSumColumns x kSumLanes threads takes kSumColumns adjacent columns (one
// coalesced read per lane and block row); lane l adds block rows l, l + kSumLanes, ... in order, and
// the lanes' sums are added in lane order: the same bits every time.
constexpr int kSumColumns = 32;
constexpr int kSumLanes = 16;
__global__ void sumPartialsKernel(const float* __restrict__ partial, int blocks, int groups, int64_t columns,
                                  float* __restrict__ dweight, float* __restrict__ dbias) {
    __shared__ float lanes[kSumLanes][kSumColumns + 1];
    const int64_t c = blockIdx.x * static_cast<int64_t>(kSumColumns) + threadIdx.x;
    const int second = static_cast<int>(blockIdx.y) / groups, group = static_cast<int>(blockIdx.y) % groups;
    const float* half = partial + (static_cast<int64_t>(second) * groups + group) * blocks * columns;
    float s = 0.f;
    if (c < columns)
        for (int b = threadIdx.y; b < blocks; b += kSumLanes) s += half[static_cast<int64_t>(b) * columns + c];
    lanes[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y != 0 || c >= columns) return;
    float total = 0.f;
    for (int l = 0; l < kSumLanes; ++l) total += lanes[l][threadIdx.x];
    (second == 0 ? dweight : dbias)[static_cast<int64_t>(group) * columns + c] = total;
}

// Blocks of each group's backward: about kBackwardBlocks in all, at most one per row.
int blocksPerGroup(int64_t rows, int64_t groups) {
    return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(rows / groups, kBackwardBlocks / groups)));
}

template <template <int> class Launch, typename... Args>
cudaError_t dispatch(int64_t columns, Args... args) {
    const int64_t per = (columns + kThreads - 1) / kThreads;
    if (per <= 1) return Launch<1>::run(args...);
    if (per <= 2) return Launch<2>::run(args...);
    if (per <= 4) return Launch<4>::run(args...);
    if (per <= 8) return Launch<8>::run(args...);
    if (per <= 16) return Launch<16>::run(args...);
    if (per <= 32) return Launch<32>::run(args...);
    return cudaErrorInvalidValue;
}

template <int kPer> struct LaunchForward {
    template <typename TS>
    static cudaError_t run(const TS* x, const __nv_bfloat16* branch, TS* added, const float* weight,
                           const float* bias, int64_t rows, int64_t columns, int64_t groups, float eps,
                           __nv_bfloat16* y, float* mean, float* rstd, cudaStream_t stream) {
        forwardKernel<kPer, TS><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
            x, branch, added, weight, bias, columns, rows / groups, eps, y, mean, rstd);
        return cudaGetLastError();
    }
};

template <int kPer> struct LaunchBackward {
    template <typename TS>
    static cudaError_t run(const __nv_bfloat16* dy, const TS* x, const float* weight, const float* mean,
                           const float* rstd, int64_t rows, int64_t columns, int64_t groups, const TS* residual,
                           TS* dx, __nv_bfloat16* dxBf16, float* partial, cudaStream_t stream) {
        const int perGroup = blocksPerGroup(rows, groups);
        backwardKernel<kPer, TS><<<static_cast<unsigned>(perGroup * groups), kThreads, 0, stream>>>(
            dy, x, weight, mean, rstd, rows / groups, perGroup, columns, residual, dx, dxBf16, partial);
        return cudaGetLastError();
    }
};

} // namespace

cudaError_t layerNormForward(const void* x, StreamType type, const void* branchBf16, void* added,
                             const float* weight, const float* bias, int64_t rows, int64_t columns, int64_t groups,
                             double eps, void* yBf16, float* mean, float* rstd, cudaStream_t stream) {
    if (rows <= 0 || columns <= 0) return rows == 0 ? cudaSuccess : cudaErrorInvalidValue;
    if (columns > kLayerNormMaxColumns || rows > 0x7fffffff) return cudaErrorInvalidValue;
    if (groups <= 0 || rows % groups != 0) return cudaErrorInvalidValue;
    if ((branchBf16 == nullptr) != (added == nullptr)) return cudaErrorInvalidValue;
    return forStreamType(type, [&](auto element) {
        using TS = decltype(element);
        return dispatch<LaunchForward>(columns, static_cast<const TS*>(x),
                                       static_cast<const __nv_bfloat16*>(branchBf16), static_cast<TS*>(added), weight,
                                       bias, rows, columns, groups, static_cast<float>(eps),
                                       static_cast<__nv_bfloat16*>(yBf16), mean, rstd, stream);
    });
}

int64_t layerNormBackwardScratch(int64_t rows, int64_t columns, int64_t groups) {
    groups = std::max<int64_t>(groups, 1);
    return 2 * groups * static_cast<int64_t>(blocksPerGroup(std::max<int64_t>(rows, groups), groups)) * columns;
}

cudaError_t layerNormBackward(const void* dyBf16, const void* x, StreamType type, const float* weight,
                              const float* mean, const float* rstd, int64_t rows, int64_t columns, int64_t groups,
                              const void* residualGrad, void* dx, void* dxBf16, float* dweight, float* dbias,
                              float* partial, cudaStream_t stream) {
    if (columns <= 0 || columns > kLayerNormMaxColumns || rows < 0) return cudaErrorInvalidValue;
    if (groups <= 0 || groups > kLayerNormMaxGroups || rows % groups != 0) return cudaErrorInvalidValue;
    if (rows == 0) {
        cudaError_t e = cudaMemsetAsync(dweight, 0, sizeof(float) * columns * groups, stream);
        return e != cudaSuccess ? e : cudaMemsetAsync(dbias, 0, sizeof(float) * columns * groups, stream);
    }
    cudaError_t e = forStreamType(type, [&](auto element) {
        using TS = decltype(element);
        return dispatch<LaunchBackward>(columns, static_cast<const __nv_bfloat16*>(dyBf16), static_cast<const TS*>(x),
                                        weight, mean, rstd, rows, columns, groups,
                                        static_cast<const TS*>(residualGrad), static_cast<TS*>(dx),
                                        static_cast<__nv_bfloat16*>(dxBf16), partial, stream);
    });
    if (e != cudaSuccess) return e;
    const dim3 grid(static_cast<unsigned>((columns + kSumColumns - 1) / kSumColumns), static_cast<unsigned>(2 * groups));
    sumPartialsKernel<<<grid, dim3(kSumColumns, kSumLanes), 0, stream>>>(
        partial, blocksPerGroup(rows, groups), static_cast<int>(groups), columns, dweight, dbias);
    return cudaGetLastError();
}

} // namespace parallax::kernels

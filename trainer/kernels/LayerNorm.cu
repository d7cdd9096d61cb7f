#include "trainer/kernels/LayerNorm.h"

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
template <int kPer>
__global__ void forwardKernel(const float* __restrict__ x, const float* __restrict__ weight,
                              const float* __restrict__ bias, int64_t columns, float eps,
                              __nv_bfloat16* __restrict__ y, float* __restrict__ mean, float* __restrict__ rstd) {
    const int64_t row = blockIdx.x;
    const float* xr = x + row * columns;
    float v[kPer];
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
        const int64_t c = threadIdx.x + static_cast<int64_t>(i) * kThreads;
        v[i] = c < columns ? xr[c] : 0.f;
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
        if (c < columns) yr[c] = __float2bfloat16((v[i] - mu) * r * weight[c] + bias[c]);
    }
    if (threadIdx.x == 0) {
        mean[row] = mu;
        rstd[row] = r;
    }
}

// Rows blockIdx.x, blockIdx.x + gridDim.x, ...: dx per row; this block's sums of dy * xhat and dy
// per column go to partial[blockIdx.x] (weight) and partial[gridDim.x + blockIdx.x] (bias).
template <int kPer>
__global__ void backwardKernel(const __nv_bfloat16* __restrict__ dy, const float* __restrict__ x,
                               const float* __restrict__ weight, const float* __restrict__ mean,
                               const float* __restrict__ rstd, int64_t rows, int64_t columns,
                               float* __restrict__ dx, float* __restrict__ partial) {
    float w[kPer], dw[kPer], db[kPer];
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
        const int64_t c = threadIdx.x + static_cast<int64_t>(i) * kThreads;
        w[i] = c < columns ? weight[c] : 0.f;
        dw[i] = 0.f;
        db[i] = 0.f;
    }
    const float invColumns = 1.f / static_cast<float>(columns);
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const float mu = mean[row], r = rstd[row];
        const float* xr = x + row * columns;
        const __nv_bfloat16* gr = dy + row * columns;
        float xhat[kPer], g[kPer];
        float2 sums = make_float2(0.f, 0.f); // sum of w dy, sum of w dy xhat
#pragma unroll
        for (int i = 0; i < kPer; ++i) {
            const int64_t c = threadIdx.x + static_cast<int64_t>(i) * kThreads;
            const bool in = c < columns;
            xhat[i] = in ? (xr[c] - mu) * r : 0.f;
            g[i] = in ? __bfloat162float(gr[c]) : 0.f;
            const float wg = w[i] * g[i];
            sums.x += wg;
            sums.y += wg * xhat[i];
            dw[i] += g[i] * xhat[i];
            db[i] += g[i];
        }
        sums = blockSum(sums);
        const float a = sums.x * invColumns, b = sums.y * invColumns;
        float* dxr = dx + row * columns;
#pragma unroll
        for (int i = 0; i < kPer; ++i) {
            const int64_t c = threadIdx.x + static_cast<int64_t>(i) * kThreads;
            if (c < columns) dxr[c] = r * (w[i] * g[i] - a - xhat[i] * b);
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

// dweight[c] = sum over blocks of partial[b][c]; dbias likewise from the second half.
__global__ void sumPartialsKernel(const float* __restrict__ partial, int blocks, int64_t columns,
                                  float* __restrict__ dweight, float* __restrict__ dbias) {
    const int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (c >= columns) return;
    float sw = 0.f, sb = 0.f;
    for (int b = 0; b < blocks; ++b) {
        sw += partial[static_cast<int64_t>(b) * columns + c];
        sb += partial[static_cast<int64_t>(blocks + b) * columns + c];
    }
    dweight[c] = sw;
    dbias[c] = sb;
}

int backwardBlocks(int64_t rows) {
    return static_cast<int>(std::min<int64_t>(rows, kBackwardBlocks));
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
    static cudaError_t run(const float* x, const float* weight, const float* bias, int64_t rows, int64_t columns,
                           float eps, __nv_bfloat16* y, float* mean, float* rstd, cudaStream_t stream) {
        forwardKernel<kPer><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, weight, bias, columns, eps, y,
                                                                                 mean, rstd);
        return cudaGetLastError();
    }
};

template <int kPer> struct LaunchBackward {
    static cudaError_t run(const __nv_bfloat16* dy, const float* x, const float* weight, const float* mean,
                           const float* rstd, int64_t rows, int64_t columns, float* dx, float* partial,
                           cudaStream_t stream) {
        backwardKernel<kPer><<<backwardBlocks(rows), kThreads, 0, stream>>>(dy, x, weight, mean, rstd, rows, columns,
                                                                            dx, partial);
        return cudaGetLastError();
    }
};

} // namespace

cudaError_t layerNormForward(const float* x, const float* weight, const float* bias, int64_t rows, int64_t columns,
                             double eps, void* yBf16, float* mean, float* rstd, cudaStream_t stream) {
    if (rows <= 0 || columns <= 0) return rows == 0 ? cudaSuccess : cudaErrorInvalidValue;
    if (columns > kLayerNormMaxColumns || rows > 0x7fffffff) return cudaErrorInvalidValue;
    return dispatch<LaunchForward>(columns, x, weight, bias, rows, columns, static_cast<float>(eps),
                                   static_cast<__nv_bfloat16*>(yBf16), mean, rstd, stream);
}

int64_t layerNormBackwardScratch(int64_t rows, int64_t columns) {
    return 2 * static_cast<int64_t>(backwardBlocks(std::max<int64_t>(rows, 1))) * columns;
}

cudaError_t layerNormBackward(const void* dyBf16, const float* x, const float* weight, const float* mean,
                              const float* rstd, int64_t rows, int64_t columns, float* dx, float* dweight,
                              float* dbias, float* partial, cudaStream_t stream) {
    if (columns <= 0 || columns > kLayerNormMaxColumns || rows < 0) return cudaErrorInvalidValue;
    if (rows == 0) {
        cudaError_t e = cudaMemsetAsync(dweight, 0, sizeof(float) * columns, stream);
        return e != cudaSuccess ? e : cudaMemsetAsync(dbias, 0, sizeof(float) * columns, stream);
    }
    cudaError_t e = dispatch<LaunchBackward>(columns, static_cast<const __nv_bfloat16*>(dyBf16), x, weight, mean,
                                             rstd, rows, columns, dx, partial, stream);
    if (e != cudaSuccess) return e;
    const int threads = 256;
    sumPartialsKernel<<<static_cast<unsigned>((columns + threads - 1) / threads), threads, 0, stream>>>(
        partial, backwardBlocks(rows), columns, dweight, dbias);
    return cudaGetLastError();
}

} // namespace parallax::kernels

#include "trainer/kernels/CrossEntropy.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>

namespace parallax::kernels {
namespace {

template <typename T> __device__ __forceinline__ float toFloat(T v);
template <> __device__ __forceinline__ float toFloat<float>(float v) { return v; }
template <> __device__ __forceinline__ float toFloat<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <> __device__ __forceinline__ float toFloat<__half>(__half v) { return __half2float(v); }

template <typename T> __device__ __forceinline__ T fromFloat(float v);
template <> __device__ __forceinline__ float fromFloat<float>(float v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
template <> __device__ __forceinline__ __half fromFloat<__half>(float v) { return __float2half(v); }

// Sixteen bytes of elements: one vectorized load or store.
template <typename T> struct alignas(16) Pack {
    static constexpr int kSize = 16 / sizeof(T);
    T v[kSize];
};

// A running maximum and the sum of exp(x - max) over the elements seen.
struct MaxSum {
    float max;
    float sum;
};

__device__ __forceinline__ void add(MaxSum& a, float x) {
    if (x > a.max) {
        a.sum = a.sum * __expf(a.max - x) + 1.0f;
        a.max = x;
    } else {
        a.sum += __expf(x - a.max);
    }
}

__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
    if (a.max == -INFINITY) return b;
    if (b.max == -INFINITY) return a;
    const float m = fmaxf(a.max, b.max);
    return {m, a.sum * __expf(a.max - m) + b.sum * __expf(b.max - m)};
}

constexpr int kMaxWarps = 32;

// Every thread of the block gets the merged value.
__device__ MaxSum blockMerge(MaxSum v) {
    __shared__ MaxSum warps[kMaxWarps];
    __shared__ MaxSum total;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int offset = 16; offset > 0; offset /= 2) {
        MaxSum other{__shfl_xor_sync(0xffffffffu, v.max, offset), __shfl_xor_sync(0xffffffffu, v.sum, offset)};
        v = merge(v, other);
    }
    if (lane == 0) warps[warp] = v;
    __syncthreads();
    if (warp == 0) {
        const int count = (blockDim.x + 31) / 32;
        v = lane < count ? warps[lane] : MaxSum{-INFINITY, 0.0f};
        for (int offset = 16; offset > 0; offset /= 2) {
            MaxSum other{__shfl_xor_sync(0xffffffffu, v.max, offset), __shfl_xor_sync(0xffffffffu, v.sum, offset)};
            v = merge(v, other);
        }
        if (lane == 0) total = v;
    }
    __syncthreads();
    return total;
}

// One block per row. Vectorized: every row starts on a 16-byte boundary (checked by the launcher).
template <typename T, bool Vectorized>
__global__ void forwardKernel(const T* __restrict__ logits, int64_t vocab, const int64_t* __restrict__ labels,
                              int64_t ignoreIndex, float* __restrict__ loss, float* __restrict__ lse) {
    const int64_t row = blockIdx.x;
    const T* x = logits + row * vocab;
    MaxSum acc{-INFINITY, 0.0f};
    int64_t tail = 0;
    if (Vectorized) {
        const Pack<T>* packs = reinterpret_cast<const Pack<T>*>(x);
        const int64_t count = vocab / Pack<T>::kSize;
        for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
            const Pack<T> p = packs[i];
#pragma unroll
            for (int k = 0; k < Pack<T>::kSize; ++k) add(acc, toFloat(p.v[k]));
        }
        tail = count * Pack<T>::kSize;
    }
    for (int64_t i = tail + threadIdx.x; i < vocab; i += blockDim.x) add(acc, toFloat(x[i]));
    const MaxSum total = blockMerge(acc);
    if (threadIdx.x == 0) {
        const float l = total.max + logf(total.sum);
        lse[row] = l;
        const int64_t label = labels[row];
        if (label == ignoreIndex) loss[row] = 0.0f;
        else if (label < 0 || label >= vocab) loss[row] = NAN;
        else loss[row] = l - toFloat(x[label]);
    }
}

template <typename T, bool Vectorized>
__global__ void backwardKernel(const T* __restrict__ logits, int64_t vocab, const int64_t* __restrict__ labels,
                               int64_t ignoreIndex, const float* __restrict__ lse, const float* __restrict__ gradLoss,
                               int64_t gradStride, T* __restrict__ grad) {
    const int64_t row = blockIdx.x;
    const T* x = logits + row * vocab;
    T* g = grad + row * vocab;
    const int64_t label = labels[row];
    const bool ignored = label == ignoreIndex;
    const float scale = ignored ? 0.0f : gradLoss[row * gradStride];
    const float l = lse[row];
    int64_t tail = 0;
    if (Vectorized) {
        const Pack<T>* in = reinterpret_cast<const Pack<T>*>(x);
        Pack<T>* out = reinterpret_cast<Pack<T>*>(g);
        const int64_t count = vocab / Pack<T>::kSize;
        for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
            const Pack<T> p = in[i];
            Pack<T> r;
#pragma unroll
            for (int k = 0; k < Pack<T>::kSize; ++k) {
                const int64_t column = i * Pack<T>::kSize + k;
                const float target = column == label ? 1.0f : 0.0f;
                r.v[k] = fromFloat<T>(scale * (__expf(toFloat(p.v[k]) - l) - target));
            }
            out[i] = r;
        }
        tail = count * Pack<T>::kSize;
    }
    for (int64_t i = tail + threadIdx.x; i < vocab; i += blockDim.x) {
        const float target = i == label ? 1.0f : 0.0f;
        g[i] = fromFloat<T>(scale * (__expf(toFloat(x[i]) - l) - target));
    }
}

int threadsFor(int64_t vocab) {
    return vocab >= 8192 ? 512 : vocab >= 1024 ? 256 : 64;
}

bool aligned16(const void* p) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

template <typename T>
cudaError_t forwardTyped(const void* logits, int64_t rows, int64_t vocab, const int64_t* labels, int64_t ignoreIndex,
                         float* loss, float* lse, cudaStream_t stream) {
    const T* x = static_cast<const T*>(logits);
    const bool vectorized = aligned16(x) && (vocab * static_cast<int64_t>(sizeof(T))) % 16 == 0;
    const dim3 grid(static_cast<unsigned>(rows)), block(threadsFor(vocab));
    if (vectorized) forwardKernel<T, true><<<grid, block, 0, stream>>>(x, vocab, labels, ignoreIndex, loss, lse);
    else forwardKernel<T, false><<<grid, block, 0, stream>>>(x, vocab, labels, ignoreIndex, loss, lse);
    return cudaGetLastError();
}

template <typename T>
cudaError_t backwardTyped(const void* logits, int64_t rows, int64_t vocab, const int64_t* labels, int64_t ignoreIndex,
                          const float* lse, const float* gradLoss, int64_t gradStride, void* gradLogits,
                          cudaStream_t stream) {
    const T* x = static_cast<const T*>(logits);
    T* g = static_cast<T*>(gradLogits);
    const bool vectorized = aligned16(x) && aligned16(g) && (vocab * static_cast<int64_t>(sizeof(T))) % 16 == 0;
    const dim3 grid(static_cast<unsigned>(rows)), block(threadsFor(vocab));
    if (vectorized)
        backwardKernel<T, true><<<grid, block, 0, stream>>>(x, vocab, labels, ignoreIndex, lse, gradLoss, gradStride, g);
    else
        backwardKernel<T, false><<<grid, block, 0, stream>>>(x, vocab, labels, ignoreIndex, lse, gradLoss, gradStride, g);
    return cudaGetLastError();
}

constexpr int64_t kMaxRows = 2147483647; // grid.x

} // namespace

cudaError_t crossEntropyForward(const void* logits, ElementType type, int64_t rows, int64_t vocab,
                                const int64_t* labels, int64_t ignoreIndex, float* loss, float* lse,
                                cudaStream_t stream) {
    if (rows == 0) return cudaSuccess;
    if (rows < 0 || rows > kMaxRows || vocab <= 0) return cudaErrorInvalidValue;
    switch (type) {
    case ElementType::Float32: return forwardTyped<float>(logits, rows, vocab, labels, ignoreIndex, loss, lse, stream);
    case ElementType::BFloat16:
        return forwardTyped<__nv_bfloat16>(logits, rows, vocab, labels, ignoreIndex, loss, lse, stream);
    case ElementType::Float16: return forwardTyped<__half>(logits, rows, vocab, labels, ignoreIndex, loss, lse, stream);
    }
    return cudaErrorInvalidValue;
}

cudaError_t crossEntropyBackward(const void* logits, ElementType type, int64_t rows, int64_t vocab,
                                 const int64_t* labels, int64_t ignoreIndex, const float* lse,
                                 const float* gradLoss, int64_t gradStride, void* gradLogits,
                                 cudaStream_t stream) {
    if (rows == 0) return cudaSuccess;
    if (rows < 0 || rows > kMaxRows || vocab <= 0) return cudaErrorInvalidValue;
    switch (type) {
    case ElementType::Float32:
        return backwardTyped<float>(logits, rows, vocab, labels, ignoreIndex, lse, gradLoss, gradStride, gradLogits, stream);
    case ElementType::BFloat16:
        return backwardTyped<__nv_bfloat16>(logits, rows, vocab, labels, ignoreIndex, lse, gradLoss, gradStride,
                                            gradLogits, stream);
    case ElementType::Float16:
        return backwardTyped<__half>(logits, rows, vocab, labels, ignoreIndex, lse, gradLoss, gradStride, gradLogits,
                                     stream);
    }
    return cudaErrorInvalidValue;
}

} // namespace parallax::kernels

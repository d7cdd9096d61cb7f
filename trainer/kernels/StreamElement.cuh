#pragma once

// Device-side reading and writing of a residual stream's elements (float32 or
// bf16, StreamType.h) in float32 arithmetic, and the host-side choice of a
// kernel's instantiation by the stream type.

#include "trainer/kernels/StreamType.h"

#include <cuda_bf16.h>

namespace parallax::kernels {

__device__ __forceinline__ float widen(float v) { return v; }
__device__ __forceinline__ float widen(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T narrowTo(float v);
template <> __device__ __forceinline__ float narrowTo<float>(float v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 narrowTo<__nv_bfloat16>(float v) { return __float2bfloat16(v); }

// v rounded to T's precision (unchanged for float32).
template <typename T> __device__ __forceinline__ float roundTo(float v) { return widen(narrowTo<T>(v)); }

// Calls run(T{}) with T the stream's element type.
template <typename Run> cudaError_t forStreamType(StreamType type, Run&& run) {
    if (type == StreamType::BFloat16) return run(__nv_bfloat16{});
    return run(float{});
}

} // namespace parallax::kernels

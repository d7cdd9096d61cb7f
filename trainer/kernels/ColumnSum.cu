#include "trainer/kernels/ColumnSum.h"

#include <cuda_bf16.h>

#include <algorithm>

namespace parallax::kernels {
namespace {

constexpr int kWarps = 8;              // warps per block, each walking its own rows
constexpr int64_t kRowsPerSlice = 128; // rows one block sums

int64_t slicesOf(int64_t rows) { return std::max<int64_t>(1, (rows + kRowsPerSlice - 1) / kRowsPerSlice); }

// kWidth adjacent columns of one row as floats. kWidth 8: one aligned 16-byte load (the caller
// checked alignment and that the row has all 8); kWidth 1: one column.
template <int kWidth>
__device__ __forceinline__ void loadN(const __nv_bfloat16* p, float (&v)[kWidth]) {
    if constexpr (kWidth == 8) {
        const uint4 raw = *reinterpret_cast<const uint4*>(p);
        const auto* pairs = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const float2 f = __bfloat1622float2(pairs[k]);
            v[2 * k] = f.x;
            v[2 * k + 1] = f.y;
        }
    } else {
        static_assert(kWidth == 1, "loads are 8 columns (16 bytes) or 1");
        v[0] = __bfloat162float(*p);
    }
}

// Stores v rounded to bf16 and leaves in v the rounded values.
template <int kWidth>
__device__ __forceinline__ void storeN(__nv_bfloat16* p, float (&v)[kWidth]) {
    if constexpr (kWidth == 8) {
        uint4 raw;
        auto* pairs = reinterpret_cast<__nv_bfloat162*>(&raw);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            pairs[k] = __floats2bfloat162_rn(v[2 * k], v[2 * k + 1]);
            const float2 f = __bfloat1622float2(pairs[k]);
            v[2 * k] = f.x;
            v[2 * k + 1] = f.y;
        }
        *reinterpret_cast<uint4*>(p) = raw;
    } else {
        const __nv_bfloat16 b = __float2bfloat16(v[0]);
        *p = b;
        v[0] = __bfloat162float(b);
    }
}

// d/du of the tanh-approximated GELU, times the output gradient g (LibTorch's formula, in float).
__device__ __forceinline__ float geluTanhBackward(float g, float u) {
    constexpr float kBeta = 0.7978845608028654f; // sqrt(2 / pi)
    constexpr float kKappa = 0.044715f;
    const float u2 = u * u;
    const float t = tanhf(kBeta * (u + kKappa * u2 * u));
    const float left = 0.5f * u;
    const float right = 1.f + t;
    return g * (0.5f * right + left * (1.f - t * t) * kBeta * (1.f + 3.f * kKappa * u2));
}

// The values a column sum adds for one row: x itself, or with a GELU prologue the input gradient
// of the GELU, dx = g * gelu'(u), rounded to bf16 and written to dx (what the product's backward
// then reads), the rounded values summed.
struct Plain {
    const __nv_bfloat16* x;
    template <int kWidth>
    __device__ __forceinline__ void operator()(int64_t offset, float (&v)[kWidth]) const {
        loadN<kWidth>(x + offset, v);
    }
};

struct GeluBackward {
    const __nv_bfloat16* g;
    const __nv_bfloat16* u;
    __nv_bfloat16* dx;
    template <int kWidth>
    __device__ __forceinline__ void operator()(int64_t offset, float (&v)[kWidth]) const {
        float uv[kWidth];
        loadN<kWidth>(g + offset, v);
        loadN<kWidth>(u + offset, uv);
#pragma unroll
        for (int k = 0; k < kWidth; ++k) v[k] = geluTanhBackward(v[k], uv[k]);
        storeN<kWidth>(dx + offset, v);
    }
};

// Block (column block, slice): lane l of warp w sums columns l*kWidth .. l*kWidth + kWidth-1 of
// the block's 32*kWidth over rows w, w + kWarps, ... of the slice, four rows in flight at a time;
// the warps' sums meet in shared memory, and thread t adds column t's over the warps in order and
// writes the block's partial for it.
template <int kWidth, typename Load>
__global__ void partialSums(Load load, int64_t rows, int64_t columns, int64_t rowStride, float* __restrict__ partial) {
    constexpr int kColumns = 32 * kWidth;
    __shared__ float sums[kWarps][kColumns];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int64_t base = static_cast<int64_t>(blockIdx.x) * kColumns;
    const int64_t c = base + lane * kWidth;
    const int64_t first = static_cast<int64_t>(blockIdx.y) * kRowsPerSlice;
    const int64_t last = rows < first + kRowsPerSlice ? rows : first + kRowsPerSlice;
    float acc[kWidth] = {};
    if (c < columns) { // kWidth 8: columns is a multiple of 8, so the lane's group is whole
        int64_t r = first + warp;
        for (; r + 3 * kWarps < last; r += 4 * kWarps) {
            float v[4][kWidth];
#pragma unroll
            for (int k = 0; k < 4; ++k) load.template operator()<kWidth>(c + (r + k * kWarps) * rowStride, v[k]);
#pragma unroll
            for (int k = 0; k < 4; ++k)
#pragma unroll
                for (int j = 0; j < kWidth; ++j) acc[j] += v[k][j];
        }
        for (; r < last; r += kWarps) {
            float v[kWidth];
            load.template operator()<kWidth>(c + r * rowStride, v);
#pragma unroll
            for (int j = 0; j < kWidth; ++j) acc[j] += v[j];
        }
    }
#pragma unroll
    for (int j = 0; j < kWidth; ++j) sums[warp][lane * kWidth + j] = acc[j];
    __syncthreads();
    const int t = threadIdx.x;
    if (t < kColumns && base + t < columns) {
        float total = 0.f;
        for (int w = 0; w < kWarps; ++w) total += sums[w][t];
        partial[static_cast<int64_t>(blockIdx.y) * columns + base + t] = total;
    }
}

// The slices' partials added to out: a block of kAddColumns x kAddLanes threads takes kAddColumns
// adjacent columns (coalesced reads); lane l adds slices l, l + kAddLanes, ... in order, and the
// lanes' sums are added in lane order, so the same input gives the same bits.
constexpr int kAddColumns = 32;
constexpr int kAddLanes = 16;
__global__ void addSlices(const float* __restrict__ partial, int64_t slices, int64_t columns, float* __restrict__ out) {
    __shared__ float lanes[kAddLanes][kAddColumns + 1];
    const int64_t c = static_cast<int64_t>(blockIdx.x) * kAddColumns + threadIdx.x;
    float s = 0.f;
    if (c < columns)
        for (int64_t slice = threadIdx.y; slice < slices; slice += kAddLanes) s += partial[slice * columns + c];
    lanes[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y != 0 || c >= columns) return;
    float total = 0.f;
    for (int l = 0; l < kAddLanes; ++l) total += lanes[l][threadIdx.x];
    out[c] += total;
}

template <int kWidth, typename Load>
cudaError_t launchPartials(Load load, int64_t rows, int64_t columns, int64_t rowStride, float* partial,
                           cudaStream_t stream) {
    constexpr int kColumns = 32 * kWidth;
    const dim3 grid(static_cast<unsigned>((columns + kColumns - 1) / kColumns), static_cast<unsigned>(slicesOf(rows)));
    partialSums<kWidth><<<grid, kWarps * 32, 0, stream>>>(load, rows, columns, rowStride, partial);
    return cudaGetLastError();
}

// wide: every row's columns load as aligned 16-byte groups of 8.
template <typename Load>
cudaError_t launchColumnSums(Load load, bool wide, int64_t rows, int64_t columns, int64_t rowStride, float* out,
                             float* partial, cudaStream_t stream) {
    const int64_t slices = slicesOf(rows);
    if (slices > 65535) return cudaErrorInvalidConfiguration; // more than 8M rows: grid.y's limit
    const cudaError_t launched = wide ? launchPartials<8>(load, rows, columns, rowStride, partial, stream)
                                      : launchPartials<1>(load, rows, columns, rowStride, partial, stream);
    if (launched != cudaSuccess) return launched;
    addSlices<<<static_cast<unsigned>((columns + kAddColumns - 1) / kAddColumns), dim3(kAddColumns, kAddLanes), 0,
                stream>>>(partial, slices, columns, out);
    return cudaGetLastError();
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

} // namespace

int64_t columnSumScratch(int64_t rows, int64_t columns) { return slicesOf(rows) * std::max<int64_t>(1, columns); }

cudaError_t columnSumAccumulate(const void* xBf16, int64_t rows, int64_t columns, int64_t rowStride, float* out,
                                float* partial, cudaStream_t stream) {
    if (rows < 0 || columns < 0 || rowStride < columns) return cudaErrorInvalidValue;
    if (rows == 0 || columns == 0) return cudaSuccess;
    const auto* x = static_cast<const __nv_bfloat16*>(xBf16);
    // 16-byte groups when the matrix starts on 16 bytes and every row starts and ends on a group.
    return launchColumnSums(Plain{x}, aligned16(x) && rowStride % 8 == 0 && columns % 8 == 0, rows, columns,
                            rowStride, out, partial, stream);
}

cudaError_t geluBackwardColumnSum(const void* gBf16, const void* uBf16, int64_t rows, int64_t columns, void* dxBf16,
                                  float* out, float* partial, cudaStream_t stream) {
    if (rows < 0 || columns < 0) return cudaErrorInvalidValue;
    if (rows == 0 || columns == 0) return cudaSuccess;
    const GeluBackward load{static_cast<const __nv_bfloat16*>(gBf16), static_cast<const __nv_bfloat16*>(uBf16),
                            static_cast<__nv_bfloat16*>(dxBf16)};
    const bool wide = aligned16(gBf16) && aligned16(uBf16) && aligned16(dxBf16) && columns % 8 == 0;
    return launchColumnSums(load, wide, rows, columns, columns, out, partial, stream);
}

} // namespace parallax::kernels

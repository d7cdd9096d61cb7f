#include "trainer/kernels/ColumnSum.h"

#include <cuda_bf16.h>

#include <algorithm>

namespace parallax::kernels {
namespace {

constexpr int kWarps = 8;             // warps per block, each walking its own rows
constexpr int kColumnsPerBlock = 64;  // two columns per lane
constexpr int64_t kRowsPerSlice = 256; // rows one block sums

int64_t slicesOf(int64_t rows) { return std::max<int64_t>(1, (rows + kRowsPerSlice - 1) / kRowsPerSlice); }

// Two adjacent columns of one row as floats; the second is 0 past the last column.
template <bool kPairs>
__device__ __forceinline__ float2 load2(const __nv_bfloat16* p, bool second) {
    if (kPairs && second) return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(p));
    return make_float2(__bfloat162float(p[0]), second ? __bfloat162float(p[1]) : 0.f);
}

template <bool kPairs>
__device__ __forceinline__ void store2(__nv_bfloat16* p, float2 v, bool second) {
    if (kPairs && second) {
        *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(v.x, v.y);
        return;
    }
    p[0] = __float2bfloat16(v.x);
    if (second) p[1] = __float2bfloat16(v.y);
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

// The value a column sum adds for one row: x itself, or with a GELU prologue the input gradient
// of the GELU, dx = g * gelu'(u), rounded to bf16 and written to dx (what the product's backward
// then reads), the rounded value summed.
struct Plain {
    const __nv_bfloat16* x;
    template <bool kPairs>
    __device__ __forceinline__ float2 operator()(int64_t offset, bool second) const {
        return load2<kPairs>(x + offset, second);
    }
};

struct GeluBackward {
    const __nv_bfloat16* g;
    const __nv_bfloat16* u;
    __nv_bfloat16* dx;
    template <bool kPairs>
    __device__ __forceinline__ float2 operator()(int64_t offset, bool second) const {
        const float2 gv = load2<kPairs>(g + offset, second), uv = load2<kPairs>(u + offset, second);
        float2 d = make_float2(geluTanhBackward(gv.x, uv.x), second ? geluTanhBackward(gv.y, uv.y) : 0.f);
        store2<kPairs>(dx + offset, d, second);
        d.x = __bfloat162float(__float2bfloat16(d.x));
        d.y = __bfloat162float(__float2bfloat16(d.y));
        return d;
    }
};

// Block (column block, slice): lane l of warp w sums columns 2l and 2l+1 of the block over rows
// w, w + kWarps, ... of the slice, four rows in flight at a time; the warps' sums meet in shared
// memory and the block writes one partial per column. kPairs: the two columns are loaded as one
// aligned bf16 pair.
template <bool kPairs, typename Load>
__global__ void partialSums(Load load, int64_t rows, int64_t columns, int64_t rowStride, float* __restrict__ partial) {
    __shared__ float2 sums[kWarps][32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int64_t c = static_cast<int64_t>(blockIdx.x) * kColumnsPerBlock + 2 * lane;
    const int64_t first = static_cast<int64_t>(blockIdx.y) * kRowsPerSlice;
    const int64_t last = rows < first + kRowsPerSlice ? rows : first + kRowsPerSlice;
    float2 acc = make_float2(0.f, 0.f);
    if (c < columns) {
        const bool second = c + 1 < columns;
        int64_t r = first + warp;
        for (; r + 3 * kWarps < last; r += 4 * kWarps) {
            float2 v[4];
#pragma unroll
            for (int k = 0; k < 4; ++k) v[k] = load.template operator()<kPairs>(c + (r + k * kWarps) * rowStride, second);
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                acc.x += v[k].x;
                acc.y += v[k].y;
            }
        }
        for (; r < last; r += kWarps) {
            const float2 v = load.template operator()<kPairs>(c + r * rowStride, second);
            acc.x += v.x;
            acc.y += v.y;
        }
    }
    sums[warp][lane] = acc;
    __syncthreads();
    if (warp == 0) {
        float2 total = make_float2(0.f, 0.f);
        for (int w = 0; w < kWarps; ++w) {
            total.x += sums[w][lane].x;
            total.y += sums[w][lane].y;
        }
        float* row = partial + static_cast<int64_t>(blockIdx.y) * columns;
        if (c < columns) row[c] = total.x;
        if (c + 1 < columns) row[c + 1] = total.y;
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

template <typename Load>
cudaError_t launchColumnSums(Load load, bool pairs, int64_t rows, int64_t columns, int64_t rowStride, float* out,
                             float* partial, cudaStream_t stream) {
    const int64_t slices = slicesOf(rows);
    if (slices > 65535) return cudaErrorInvalidConfiguration; // more than 16M rows: grid.y's limit
    const dim3 grid(static_cast<unsigned>((columns + kColumnsPerBlock - 1) / kColumnsPerBlock),
                    static_cast<unsigned>(slices));
    if (pairs) partialSums<true><<<grid, kWarps * 32, 0, stream>>>(load, rows, columns, rowStride, partial);
    else partialSums<false><<<grid, kWarps * 32, 0, stream>>>(load, rows, columns, rowStride, partial);
    const cudaError_t launched = cudaGetLastError();
    if (launched != cudaSuccess) return launched;
    addSlices<<<static_cast<unsigned>((columns + kAddColumns - 1) / kAddColumns), dim3(kAddColumns, kAddLanes), 0,
                stream>>>(partial, slices, columns, out);
    return cudaGetLastError();
}

bool aligned4(const void* p) { return reinterpret_cast<uintptr_t>(p) % 4 == 0; }

} // namespace

int64_t columnSumScratch(int64_t rows, int64_t columns) { return slicesOf(rows) * std::max<int64_t>(1, columns); }

cudaError_t columnSumAccumulate(const void* xBf16, int64_t rows, int64_t columns, int64_t rowStride, float* out,
                                float* partial, cudaStream_t stream) {
    if (rows < 0 || columns < 0 || rowStride < columns) return cudaErrorInvalidValue;
    if (rows == 0 || columns == 0) return cudaSuccess;
    const auto* x = static_cast<const __nv_bfloat16*>(xBf16);
    // Pairs are aligned when the matrix starts on 4 bytes and every row starts on an even column.
    return launchColumnSums(Plain{x}, aligned4(x) && rowStride % 2 == 0, rows, columns, rowStride, out, partial,
                            stream);
}

cudaError_t geluBackwardColumnSum(const void* gBf16, const void* uBf16, int64_t rows, int64_t columns, void* dxBf16,
                                  float* out, float* partial, cudaStream_t stream) {
    if (rows < 0 || columns < 0) return cudaErrorInvalidValue;
    if (rows == 0 || columns == 0) return cudaSuccess;
    const GeluBackward load{static_cast<const __nv_bfloat16*>(gBf16), static_cast<const __nv_bfloat16*>(uBf16),
                            static_cast<__nv_bfloat16*>(dxBf16)};
    const bool pairs = aligned4(gBf16) && aligned4(uBf16) && aligned4(dxBf16) && columns % 2 == 0;
    return launchColumnSums(load, pairs, rows, columns, columns, out, partial, stream);
}

} // namespace parallax::kernels

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

// Block (column block, slice): lane l of warp w sums columns 2l and 2l+1 of the block over rows
// w, w + kWarps, ... of the slice, four rows in flight at a time; the warps' sums meet in shared
// memory and the block writes one partial per column. kPairs: the two columns are loaded as one
// aligned bf16 pair.
template <bool kPairs>
__global__ void partialSums(const __nv_bfloat16* __restrict__ x, int64_t rows, int64_t columns, int64_t rowStride,
                            float* __restrict__ partial) {
    __shared__ float2 sums[kWarps][32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int64_t c = static_cast<int64_t>(blockIdx.x) * kColumnsPerBlock + 2 * lane;
    const int64_t first = static_cast<int64_t>(blockIdx.y) * kRowsPerSlice;
    const int64_t last = rows < first + kRowsPerSlice ? rows : first + kRowsPerSlice;
    float2 acc = make_float2(0.f, 0.f);
    if (c < columns) {
        const bool second = c + 1 < columns;
        const __nv_bfloat16* base = x + c;
        int64_t r = first + warp;
        for (; r + 3 * kWarps < last; r += 4 * kWarps) {
            float2 v[4];
#pragma unroll
            for (int k = 0; k < 4; ++k) v[k] = load2<kPairs>(base + (r + k * kWarps) * rowStride, second);
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                acc.x += v[k].x;
                acc.y += v[k].y;
            }
        }
        for (; r < last; r += kWarps) {
            const float2 v = load2<kPairs>(base + r * rowStride, second);
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

// One thread per column: the slices' partials in order, added to out.
__global__ void addSlices(const float* __restrict__ partial, int64_t slices, int64_t columns, float* __restrict__ out) {
    const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (c >= columns) return;
    float total = 0.f;
    for (int64_t s = 0; s < slices; ++s) total += partial[s * columns + c];
    out[c] += total;
}

} // namespace

int64_t columnSumScratch(int64_t rows, int64_t columns) { return slicesOf(rows) * std::max<int64_t>(1, columns); }

cudaError_t columnSumAccumulate(const void* xBf16, int64_t rows, int64_t columns, int64_t rowStride, float* out,
                                float* partial, cudaStream_t stream) {
    if (rows < 0 || columns < 0 || rowStride < columns) return cudaErrorInvalidValue;
    if (rows == 0 || columns == 0) return cudaSuccess;
    const auto* x = static_cast<const __nv_bfloat16*>(xBf16);
    const int64_t slices = slicesOf(rows);
    if (slices > 65535) return cudaErrorInvalidConfiguration; // more than 16M rows: grid.y's limit
    const dim3 grid(static_cast<unsigned>((columns + kColumnsPerBlock - 1) / kColumnsPerBlock),
                    static_cast<unsigned>(slices));
    // Pairs are aligned when the matrix starts on 4 bytes and every row starts on an even column.
    const bool pairs = reinterpret_cast<uintptr_t>(x) % 4 == 0 && rowStride % 2 == 0;
    if (pairs) partialSums<true><<<grid, kWarps * 32, 0, stream>>>(x, rows, columns, rowStride, partial);
    else partialSums<false><<<grid, kWarps * 32, 0, stream>>>(x, rows, columns, rowStride, partial);
    const cudaError_t launched = cudaGetLastError();
    if (launched != cudaSuccess) return launched;
    constexpr int kThreads = 256;
    addSlices<<<static_cast<unsigned>((columns + kThreads - 1) / kThreads), kThreads, 0, stream>>>(partial, slices,
                                                                                                  columns, out);
    return cudaGetLastError();
}

} // namespace parallax::kernels

#pragma once

// Column sums of a bf16 matrix added into a float32 vector: the bias gradient of a linear layer
// (the sum of its output gradient over all rows) accumulated straight into the fp32 gradient
// bucket. LibTorch's reduction over the first dimension of a strided bf16 matrix, followed by the
// add into the bucket, runs well below the memory bandwidth; this reads the matrix once, with each
// warp loading whole rows of 256 columns (16 bytes per lane). Deterministic: blocks write partial sums per slice of
// rows, and a second pass adds the slices in order. No LibTorch headers here.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace parallax::kernels {

// Floats of scratch columnSumAccumulate(...) needs for a (rows, columns) matrix.
int64_t columnSumScratch(int64_t rows, int64_t columns);

// out[c] += sum over r of x[r * rowStride + c] for c < columns (x bf16, element strides; the rows
// may be a slice of wider rows, rowStride >= columns). `partial` holds columnSumScratch(...) floats.
cudaError_t columnSumAccumulate(const void* xBf16, int64_t rows, int64_t columns, int64_t rowStride, float* out,
                                float* partial, cudaStream_t stream);

// The backward of the tanh-approximated GELU with the bias gradient of the product before it, in
// one pass: dx = g * gelu'(u) for the contiguous (rows, columns) bf16 matrices g (the GELU output's
// gradient) and u (its input), written to dx in bf16, and out[c] += the sum over rows of dx's bf16
// values. `partial` holds columnSumScratch(rows, columns) floats.
cudaError_t geluBackwardColumnSum(const void* gBf16, const void* uBf16, int64_t rows, int64_t columns, void* dxBf16,
                                  float* out, float* partial, cudaStream_t stream);

} // namespace parallax::kernels

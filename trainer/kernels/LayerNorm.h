#pragma once

// LayerNorm over the last dimension for mixed precision, for the CUDA worker (built only with a
// CUDA LibTorch): float32 or bf16 input (StreamType.h), float32 weight and bias, output in bf16 —
// what the next matrix product reads — written once. Under autocast the composed path writes a
// float32 output and casts it again before the product, and backward casts the bf16 gradient back
// to float32 before reading it: four passes over the activations that these kernels do not make. Statistics in float32.
// No LibTorch headers here: plain pointers and a stream.

#include "trainer/kernels/StreamType.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace parallax::kernels {

// The widest row the kernels take (columns held in registers, 256 threads per row).
constexpr int64_t kLayerNormMaxColumns = 8192;
// The most groups (rows with their own weight and bias) the backward pass takes.
constexpr int64_t kLayerNormMaxGroups = 1024;

// y[r, :] = (x[r, :] - mean[r]) * rstd[r] * weight[g] + bias[g] (bf16), g = r / (rows / groups): the
// rows form `groups` equal runs, each with its own weight and bias (`columns` floats each, one
// after the other): one group is a LayerNorm's affine parameters, a batch's groups an adaLN
// modulation (scale and shift per sample). mean and rstd (float32, one per row) are kept for
// backward. x (of the stream's type) and y are contiguous (rows, columns); columns <=
// kLayerNormMaxColumns. With a bf16 branch (contiguous like x; `added` then of x's type and shape,
// else both null) the row normalized is x + branch — a residual add, rounded to the stream's type —
// and that sum is written to `added` in the same pass.
cudaError_t layerNormForward(const void* x, StreamType type, const void* branchBf16, void* added,
                             const float* weight, const float* bias, int64_t rows, int64_t columns, int64_t groups,
                             double eps, void* yBf16, float* mean, float* rstd, cudaStream_t stream);

// From the bf16 gradient of y: dx (x's type, contiguous like x), and the weight and bias gradients
// (float32, `columns` for each of the groups, overwritten; groups <= 1024). `partial` is scratch of
// layerNormBackwardScratch(...) floats. With residualGrad (of x's type and shape, or null) dx is that
// plus the LayerNorm's gradient — the gradient of a residual sum that also goes on unnormalized;
// with dxBf16 (or null) dx is also written there in bf16, for a branch that was added in bf16.
int64_t layerNormBackwardScratch(int64_t rows, int64_t columns, int64_t groups);
cudaError_t layerNormBackward(const void* dyBf16, const void* x, StreamType type, const float* weight,
                              const float* mean, const float* rstd, int64_t rows, int64_t columns, int64_t groups,
                              const void* residualGrad, void* dx, void* dxBf16, float* dweight, float* dbias,
                              float* partial, cudaStream_t stream);

} // namespace parallax::kernels

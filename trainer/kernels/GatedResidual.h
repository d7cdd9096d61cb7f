#pragma once

// The gated residual of adaLN blocks, x + gate * branch, for mixed precision: x float32 or bf16
// (the residual stream, StreamType.h), branch bf16 (a product's output under autocast), gate bf16 with one row per
// sample (a slice of the modulation product's output). Under autocast the composed form writes the
// bf16 product gate * branch and then the float32 sum, and backward casts the sum's gradient to
// bf16, multiplies it twice and reduces one product over the tokens: five passes over the
// activations where these kernels make one each way. The values are those of the composed form:
// the product is rounded to bf16 before the add, and backward rounds as autocast's operations do
// before summing (in float32); a bf16 stream's sum is rounded to bf16, as a bf16 add rounds it.
// No LibTorch headers here.

#include "trainer/kernels/StreamType.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace parallax::kernels {

// out[r, c] = x[r, c] + bf16(gate[g, c] * branch[r, c]) with g = r / (rows / groups); x, branch and
// out contiguous (rows, columns), x and out of the stream's type; gate row g at gateBf16 + g *
// gateStride (elements).
cudaError_t gatedResidualForward(const void* x, StreamType type, const void* branchBf16, const void* gateBf16,
                                 int64_t gateStride, int64_t rows, int64_t columns, int64_t groups, void* out,
                                 cudaStream_t stream);

// From the sum's gradient dout (of the stream's type, contiguous like x): dbranch =
// bf16(bf16(dout) * gate) (contiguous, bf16) and dgate[g, c] = bf16(sum over group g's rows of
// bf16(bf16(dout) * branch)) (contiguous (groups, columns), bf16). x's gradient is dout itself. `partial` holds
// gatedResidualBackwardScratch(...) floats.
int64_t gatedResidualBackwardScratch(int64_t rows, int64_t columns, int64_t groups);
cudaError_t gatedResidualBackward(const void* dout, StreamType type, const void* branchBf16, const void* gateBf16,
                                  int64_t gateStride, int64_t rows, int64_t columns, int64_t groups, void* dbranchBf16,
                                  void* dgateBf16, float* partial, cudaStream_t stream);

} // namespace parallax::kernels

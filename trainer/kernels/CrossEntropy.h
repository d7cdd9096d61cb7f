#pragma once

// Fused cross-entropy over rows of logits, for the CUDA worker (built only with a CUDA LibTorch).
// The logits stay in their own dtype (bf16 under mixed precision): the forward pass reads them once
// and keeps one log-sum-exp per row; the backward pass reads them again and writes the gradient in
// the same dtype. The composed LibTorch version upcasts the (rows x vocab) logits to fp32 and
// writes softmax-sized intermediates several times, which for a 50k vocabulary dominates the
// memory traffic of a small model's step. No LibTorch headers here: plain pointers and a stream.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace parallax::kernels {

enum class ElementType { Float32, BFloat16, Float16 };

// loss[r] = logsumexp(logits[r, :]) - logits[r, labels[r]], or 0 where labels[r] == ignoreIndex;
// lse[r] = logsumexp(logits[r, :]). `logits` is contiguous (rows, vocab). A label outside
// [0, vocab) that is not ignoreIndex gives a NaN loss for its row.
cudaError_t crossEntropyForward(const void* logits, ElementType type, int64_t rows, int64_t vocab,
                                const int64_t* labels, int64_t ignoreIndex, float* loss, float* lse,
                                cudaStream_t stream);

// gradLogits[r, v] = gradLoss[r * gradStride] * (softmax(logits[r, :])[v] - (v == labels[r])),
// 0 on ignored rows. gradStride 0 broadcasts one scalar. `gradLogits` is contiguous (rows, vocab)
// of the logits' type and may not alias `logits`.
cudaError_t crossEntropyBackward(const void* logits, ElementType type, int64_t rows, int64_t vocab,
                                 const int64_t* labels, int64_t ignoreIndex, const float* lse,
                                 const float* gradLoss, int64_t gradStride, void* gradLogits,
                                 cudaStream_t stream);

} // namespace parallax::kernels

#pragma once

// AdamW over one flat float32 group (a bucket, or this rank's slice of it): parameters, gradients
// and both moments read and written in one pass, four values per load where the four arrays allow.
// The gradient scale (clipping) and the skip flag (a non-finite gradient norm) are read on the
// device, so the host never waits for the gradient norm. Same arithmetic as LibTorch's fused AdamW
// (decoupled weight decay, bias corrections folded into the step size and the denominator).
// No LibTorch headers here: plain pointers and a stream.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace parallax::kernels {

struct AdamWUpdate {
    int64_t step = 1; // this update's count, from 1
    double lr = 0.0;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double weightDecay = 0.0;
    double eps = 1e-8;
};

// For i < n: g = grad[i] * *gradScale (when given); param[i] *= 1 - lr * weightDecay; the moments
// move toward g and g^2; param[i] -= lr / (1 - beta1^step) * expAvg[i] / (sqrt(expAvgSq[i]) /
// sqrt(1 - beta2^step) + eps). Nothing is written when *skip (when given) is non-zero.
cudaError_t adamWStep(float* param, const float* grad, float* expAvg, float* expAvgSq, int64_t n,
                      const AdamWUpdate& update, const float* gradScale, const float* skip, cudaStream_t stream);

} // namespace parallax::kernels

#include "trainer/kernels/AdamW.h"

#include <algorithm>
#include <cmath>

namespace parallax::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096; // grid-stride beyond this

struct Coefficients {
    float lr, beta1, beta2, decay, eps, stepSize, sqrtBias2;
};

__device__ __forceinline__ void update(float& p, float g, float& m, float& v, const Coefficients& c, float scale) {
    g *= scale;
    p -= c.lr * c.decay * p;
    m = c.beta1 * m + (1.f - c.beta1) * g;
    v = c.beta2 * v + (1.f - c.beta2) * g * g;
    const float denom = sqrtf(v) / c.sqrtBias2 + c.eps;
    p -= c.stepSize * m / denom;
}

// kVectors: the four arrays start on 16 bytes, and the first n - n % 4 values go four at a time.
template <bool kVectors>
__global__ void adamWKernel(float* __restrict__ param, const float* __restrict__ grad, float* __restrict__ expAvg,
                            float* __restrict__ expAvgSq, int64_t n, Coefficients c, const float* gradScale,
                            const float* skip) {
    if (skip && *skip != 0.f) return;
    const float scale = gradScale ? *gradScale : 1.f;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    int64_t done = 0;
    if (kVectors) {
        const int64_t quads = n / 4;
        for (int64_t i = first; i < quads; i += stride) {
            float4 p = reinterpret_cast<float4*>(param)[i];
            const float4 g = reinterpret_cast<const float4*>(grad)[i];
            float4 m = reinterpret_cast<float4*>(expAvg)[i];
            float4 v = reinterpret_cast<float4*>(expAvgSq)[i];
            update(p.x, g.x, m.x, v.x, c, scale);
            update(p.y, g.y, m.y, v.y, c, scale);
            update(p.z, g.z, m.z, v.z, c, scale);
            update(p.w, g.w, m.w, v.w, c, scale);
            reinterpret_cast<float4*>(param)[i] = p;
            reinterpret_cast<float4*>(expAvg)[i] = m;
            reinterpret_cast<float4*>(expAvgSq)[i] = v;
        }
        done = quads * 4;
    }
    for (int64_t i = done + first; i < n; i += stride) {
        float p = param[i], m = expAvg[i], v = expAvgSq[i];
        update(p, grad[i], m, v, c, scale);
        param[i] = p;
        expAvg[i] = m;
        expAvgSq[i] = v;
    }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

} // namespace

cudaError_t adamWStep(float* param, const float* grad, float* expAvg, float* expAvgSq, int64_t n,
                      const AdamWUpdate& u, const float* gradScale, const float* skip, cudaStream_t stream) {
    if (n < 0 || u.step < 1) return cudaErrorInvalidValue;
    if (n == 0) return cudaSuccess;
    Coefficients c;
    c.lr = static_cast<float>(u.lr);
    c.beta1 = static_cast<float>(u.beta1);
    c.beta2 = static_cast<float>(u.beta2);
    c.decay = static_cast<float>(u.weightDecay);
    c.eps = static_cast<float>(u.eps);
    const double step = static_cast<double>(u.step);
    c.stepSize = static_cast<float>(u.lr / (1.0 - std::pow(u.beta1, step)));
    c.sqrtBias2 = static_cast<float>(std::sqrt(1.0 - std::pow(u.beta2, step)));
    const bool vectors = aligned16(param) && aligned16(grad) && aligned16(expAvg) && aligned16(expAvgSq);
    const int64_t perThread = vectors ? 4 : 1;
    const int64_t blocks = std::min<int64_t>(kMaxBlocks, std::max<int64_t>(1, (n / perThread + kThreads - 1) / kThreads));
    if (vectors)
        adamWKernel<true><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(param, grad, expAvg, expAvgSq, n, c,
                                                                                  gradScale, skip);
    else
        adamWKernel<false><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(param, grad, expAvg, expAvgSq, n, c,
                                                                                   gradScale, skip);
    return cudaGetLastError();
}

} // namespace parallax::kernels

#pragma once

// The residual stream types the fused adaLN kernels take (trainer/kernels/StreamType.h), read off
// a tensor, for the wrappers in this folder.

#include <torch/torch.h>

#if PARALLAX_CUDA_KERNELS
#include "trainer/kernels/StreamType.h"
#endif

namespace parallax {

// Whether x is of a type the kernels take for a stream: float32 or bf16.
inline bool isKernelStreamType(const torch::Tensor& x) {
    return x.scalar_type() == torch::kFloat32 || x.scalar_type() == torch::kBFloat16;
}

#if PARALLAX_CUDA_KERNELS
inline kernels::StreamType streamTypeOf(const torch::Tensor& x) {
    return x.scalar_type() == torch::kBFloat16 ? kernels::StreamType::BFloat16 : kernels::StreamType::Float32;
}
#endif

} // namespace parallax

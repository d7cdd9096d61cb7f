#include "trainer/ops/CrossEntropy.h"

#include <stdexcept>
#include <string>

#if PARALLAX_CUDA_KERNELS
#include "trainer/kernels/CrossEntropy.h"
#include "trainer/kernels/Status.h"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace parallax {

torch::Tensor composedCrossEntropySum(const torch::Tensor& logits, const torch::Tensor& labels, int64_t ignoreIndex) {
    return torch::nn::functional::cross_entropy(
        logits.to(torch::kFloat32), labels,
        torch::nn::functional::CrossEntropyFuncOptions().ignore_index(ignoreIndex).reduction(torch::kSum));
}

#if PARALLAX_CUDA_KERNELS
namespace {

kernels::ElementType elementType(const torch::Tensor& t) {
    switch (t.scalar_type()) {
    case torch::kFloat32: return kernels::ElementType::Float32;
    case torch::kBFloat16: return kernels::ElementType::BFloat16;
    case torch::kFloat16: return kernels::ElementType::Float16;
    default: throw std::invalid_argument("fused cross-entropy: unsupported logits dtype");
    }
}

void check(cudaError_t status, const char* stage) {
    kernels::throwOnError(status, "fused cross-entropy", stage);
}

// Per-row losses (N) from (N, V) logits; the caller sums them.
struct FusedCrossEntropy : public torch::autograd::Function<FusedCrossEntropy> {
    static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits,
                                                  const torch::Tensor& labels, int64_t ignoreIndex) {
        const c10::cuda::CUDAGuard guard(logits.device());
        const torch::Tensor x = logits.contiguous();
        const torch::Tensor y = labels.to(torch::kLong).contiguous();
        const auto floats = x.options().dtype(torch::kFloat32);
        torch::Tensor loss = torch::empty({x.size(0)}, floats);
        torch::Tensor lse = torch::empty({x.size(0)}, floats);
        check(kernels::crossEntropyForward(x.data_ptr(), elementType(x), x.size(0), x.size(1), y.data_ptr<int64_t>(),
                                           ignoreIndex, loss.data_ptr<float>(), lse.data_ptr<float>(),
                                           c10::cuda::getCurrentCUDAStream(x.device().index()).stream()),
              "forward");
        ctx->save_for_backward({x, y, lse});
        ctx->saved_data["ignore"] = ignoreIndex;
        return {loss};
    }

    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                   torch::autograd::variable_list grads) {
        const auto saved = ctx->get_saved_variables();
        const torch::Tensor& x = saved[0];
        const torch::Tensor& y = saved[1];
        const torch::Tensor& lse = saved[2];
        const c10::cuda::CUDAGuard guard(x.device());
        // Usually the expanded scalar of a sum (stride 0): read in place, never materialized.
        torch::Tensor g = grads.at(0).to(torch::kFloat32);
        if (g.dim() != 1 || g.size(0) != x.size(0)) g = g.expand({x.size(0)});
        torch::Tensor gradLogits = torch::empty_like(x, torch::MemoryFormat::Contiguous);
        check(kernels::crossEntropyBackward(x.data_ptr(), elementType(x), x.size(0), x.size(1), y.data_ptr<int64_t>(),
                                            ctx->saved_data["ignore"].toInt(), lse.data_ptr<float>(),
                                            g.data_ptr<float>(), g.stride(0), gradLogits.data_ptr(),
                                            c10::cuda::getCurrentCUDAStream(x.device().index()).stream()),
              "backward");
        return {gradLogits, torch::Tensor(), torch::Tensor()};
    }
};

} // namespace
#endif

bool fusedCrossEntropyApplies(const torch::Tensor& logits) {
#if PARALLAX_CUDA_KERNELS
    const auto type = logits.scalar_type();
    return logits.is_cuda() && logits.dim() == 2 &&
           (type == torch::kFloat32 || type == torch::kBFloat16 || type == torch::kFloat16);
#else
    (void)logits;
    return false;
#endif
}

torch::Tensor crossEntropySum(const torch::Tensor& logits, const torch::Tensor& labels, int64_t ignoreIndex) {
    if (logits.dim() != 2 || labels.dim() != 1 || labels.size(0) != logits.size(0))
        throw std::invalid_argument("crossEntropySum: expected (N, V) logits and (N) labels, got " +
                                    std::to_string(logits.dim()) + "-d logits and " + std::to_string(labels.dim()) +
                                    "-d labels");
#if PARALLAX_CUDA_KERNELS
    if (fusedCrossEntropyApplies(logits)) return FusedCrossEntropy::apply(logits, labels, ignoreIndex)[0].sum();
#endif
    return composedCrossEntropySum(logits, labels, ignoreIndex);
}

} // namespace parallax

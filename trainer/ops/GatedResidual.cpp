#include "trainer/ops/GatedResidual.h"
#include "trainer/ops/StreamTypeOf.h"

#if PARALLAX_CUDA_KERNELS
#include "trainer/kernels/GatedResidual.h"
#include "trainer/kernels/Status.h"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace parallax {

#if PARALLAX_CUDA_KERNELS
namespace {

constexpr const char* kOperation = "fused gated residual";

struct FusedGatedResidual : public torch::autograd::Function<FusedGatedResidual> {
    static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& input,
                                                  const torch::Tensor& gate, const torch::Tensor& branchIn) {
        const c10::cuda::CUDAGuard guard(input.device());
        const torch::Tensor x = input.contiguous(), branch = branchIn.contiguous();
        const int64_t groups = x.size(0), columns = x.size(-1), rows = x.numel() / columns;
        torch::Tensor out = torch::empty_like(x);
        const cudaError_t status = kernels::gatedResidualForward(
            x.data_ptr(), streamTypeOf(x), branch.data_ptr(), gate.data_ptr(), gate.stride(0), rows, columns, groups,
            out.data_ptr(), c10::cuda::getCurrentCUDAStream(x.device().index()).stream());
        kernels::throwOnError(status, kOperation, "forward");
        ctx->save_for_backward({gate, branch});
        ctx->saved_data["stream"] = static_cast<int64_t>(x.scalar_type());
        ctx->set_materialize_grads(false);
        return {out};
    }
    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                   torch::autograd::variable_list grads) {
        const torch::Tensor& gout = grads.at(0);
        if (!gout.defined()) return {torch::Tensor(), torch::Tensor(), torch::Tensor()};
        const auto saved = ctx->get_saved_variables();
        const torch::Tensor& gate = saved[0];
        const torch::Tensor& branch = saved[1];
        const c10::cuda::CUDAGuard guard(branch.device());
        const auto stream = static_cast<torch::ScalarType>(ctx->saved_data["stream"].toInt());
        const torch::Tensor dout = gout.to(stream).contiguous();
        const int64_t groups = branch.size(0), columns = branch.size(-1), rows = branch.numel() / columns;
        torch::Tensor dbranch = torch::empty_like(branch);
        torch::Tensor dgate = torch::empty({groups, 1, columns}, branch.options());
        torch::Tensor scratch = torch::empty({kernels::gatedResidualBackwardScratch(rows, columns, groups)},
                                             dout.options().dtype(torch::kFloat32));
        const cudaError_t status = kernels::gatedResidualBackward(
            dout.data_ptr(), streamTypeOf(dout), branch.data_ptr(), gate.data_ptr(), gate.stride(0), rows, columns,
            groups, dbranch.data_ptr(), dgate.data_ptr(), scratch.data_ptr<float>(),
            c10::cuda::getCurrentCUDAStream(branch.device().index()).stream());
        kernels::throwOnError(status, kOperation, "backward");
        return {dout, dgate, dbranch};
    }
};

} // namespace
#endif

bool fusedGatedResidualApplies(const torch::Tensor& x, const torch::Tensor& gate, const torch::Tensor& branch) {
#if PARALLAX_CUDA_KERNELS
    return x.is_cuda() && isKernelStreamType(x) && x.dim() == 3 && x.size(0) > 0 && x.size(0) <= 65535 &&
           branch.scalar_type() == torch::kBFloat16 && branch.sizes() == x.sizes() && branch.device() == x.device() &&
           gate.scalar_type() == torch::kBFloat16 && gate.dim() == 3 && gate.size(0) == x.size(0) &&
           gate.size(1) == 1 && gate.size(2) == x.size(2) && gate.stride(2) == 1 && gate.device() == x.device();
#else
    (void)x, (void)gate, (void)branch;
    return false;
#endif
}

torch::Tensor gatedResidual(const torch::Tensor& x, const torch::Tensor& gate, const torch::Tensor& branch) {
#if PARALLAX_CUDA_KERNELS
    if (fusedGatedResidualApplies(x, gate, branch)) return FusedGatedResidual::apply(x, gate, branch)[0];
#endif
    return x + gate * branch;
}

} // namespace parallax

#include "trainer/models/LayerNorm.h"

#include "trainer/compat/TorchCompat.h"

#include <stdexcept>
#include <string>

#if PARALLAX_CUDA_KERNELS
#include "trainer/kernels/LayerNorm.h"
#include "trainer/kernels/Status.h"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace parallax {

#if PARALLAX_CUDA_KERNELS
namespace {

void check(cudaError_t status, const char* stage) {
    kernels::throwOnError(status, "fused LayerNorm", stage);
}

struct FusedLayerNorm : public torch::autograd::Function<FusedLayerNorm> {
    static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& input,
                                                  const torch::Tensor& weight, const torch::Tensor& bias, double eps) {
        const c10::cuda::CUDAGuard guard(input.device());
        const torch::Tensor x = input.contiguous();
        const int64_t columns = x.size(-1), rows = x.numel() / columns;
        torch::Tensor y = torch::empty(x.sizes(), x.options().dtype(torch::kBFloat16));
        torch::Tensor mean = torch::empty({rows}, x.options());
        torch::Tensor rstd = torch::empty({rows}, x.options());
        const torch::Tensor w = weight.contiguous(), b = bias.contiguous();
        check(kernels::layerNormForward(x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(), rows, columns, eps,
                                        y.data_ptr(), mean.data_ptr<float>(), rstd.data_ptr<float>(),
                                        c10::cuda::getCurrentCUDAStream(x.device().index()).stream()),
              "forward");
        ctx->save_for_backward({x, w, mean, rstd});
        return {y};
    }

    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                   torch::autograd::variable_list grads) {
        const auto saved = ctx->get_saved_variables();
        const torch::Tensor& x = saved[0];
        const torch::Tensor& w = saved[1];
        const c10::cuda::CUDAGuard guard(x.device());
        const torch::Tensor dy = grads.at(0).to(torch::kBFloat16).contiguous();
        const int64_t columns = x.size(-1), rows = x.numel() / columns;
        torch::Tensor dx = torch::empty_like(x);
        torch::Tensor dw = torch::empty({columns}, x.options());
        torch::Tensor db = torch::empty({columns}, x.options());
        torch::Tensor scratch = torch::empty({kernels::layerNormBackwardScratch(rows, columns)}, x.options());
        check(kernels::layerNormBackward(dy.data_ptr(), x.data_ptr<float>(), w.data_ptr<float>(),
                                         saved[2].data_ptr<float>(), saved[3].data_ptr<float>(), rows, columns,
                                         dx.data_ptr<float>(), dw.data_ptr<float>(), db.data_ptr<float>(),
                                         scratch.data_ptr<float>(),
                                         c10::cuda::getCurrentCUDAStream(x.device().index()).stream()),
              "backward");
        return {dx, dw, db, torch::Tensor()};
    }
};

} // namespace
#endif

bool fusedLayerNormApplies(const torch::nn::LayerNormImpl& ln, const torch::Tensor& x) {
#if PARALLAX_CUDA_KERNELS
    const auto& shape = ln.options.normalized_shape();
    return x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() >= 1 && shape.size() == 1 &&
           shape[0] == x.size(-1) && x.size(-1) <= kernels::kLayerNormMaxColumns && ln.options.elementwise_affine() &&
           ln.weight.defined() && ln.bias.defined() && ln.weight.scalar_type() == torch::kFloat32 &&
           ln.bias.scalar_type() == torch::kFloat32 && compat::autocastsTo(c10::DeviceType::CUDA, torch::kBFloat16);
#else
    (void)ln, (void)x;
    return false;
#endif
}

torch::Tensor layerNorm(torch::nn::LayerNormImpl& ln, const torch::Tensor& x) {
#if PARALLAX_CUDA_KERNELS
    if (fusedLayerNormApplies(ln, x)) return FusedLayerNorm::apply(x, ln.weight, ln.bias, ln.options.eps())[0];
#endif
    return ln.forward(x);
}

} // namespace parallax

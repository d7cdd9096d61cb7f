#include "trainer/ops/LayerNorm.h"
#include "trainer/ops/StreamTypeOf.h"

#include "trainer/compat/TorchCompat.h"

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

torch::TensorOptions floatsLike(const torch::Tensor& x) { return x.options().dtype(torch::kFloat32); }

// Outputs {y}, or with a branch {x + branch, y = LayerNorm(x + branch)}. Two autograd functions
// below share these; each takes only defined tensors (LibTorch 2 records every input's device).
torch::autograd::variable_list fusedForward(torch::autograd::AutogradContext* ctx, const torch::Tensor& input,
                                            const torch::Tensor& branch, const torch::Tensor& weight,
                                            const torch::Tensor& bias, double eps) {
    const c10::cuda::CUDAGuard guard(input.device());
    const torch::Tensor x = input.contiguous();
    const torch::Tensor br = branch.defined() ? branch.contiguous() : branch;
    const int64_t columns = x.size(-1), rows = x.numel() / columns;
    torch::Tensor added = br.defined() ? torch::empty_like(x) : torch::Tensor();
    torch::Tensor y = torch::empty(x.sizes(), x.options().dtype(torch::kBFloat16));
    torch::Tensor mean = torch::empty({rows}, floatsLike(x));
    torch::Tensor rstd = torch::empty({rows}, floatsLike(x));
    const torch::Tensor w = weight.contiguous(), b = bias.contiguous();
    check(kernels::layerNormForward(x.data_ptr(), streamTypeOf(x), br.defined() ? br.data_ptr() : nullptr,
                                    added.defined() ? added.data_ptr() : nullptr, w.data_ptr<float>(),
                                    b.data_ptr<float>(), rows, columns, 1, eps, y.data_ptr(), mean.data_ptr<float>(),
                                    rstd.data_ptr<float>(), c10::cuda::getCurrentCUDAStream(x.device().index()).stream()),
          "forward");
    ctx->save_for_backward({added.defined() ? added : x, w, mean, rstd});
    ctx->set_materialize_grads(false);
    if (added.defined()) return {added, y};
    return {y};
}

// Gradients of {x, branch, weight, bias} (with a branch) or {x, weight, bias}.
torch::autograd::variable_list fusedBackward(torch::autograd::AutogradContext* ctx,
                                             const torch::autograd::variable_list& grads, bool withBranch) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& x = saved[0]; // the rows normalized
    const torch::Tensor& w = saved[1];
    const torch::Tensor residual =
        withBranch && grads.at(0).defined() ? grads.at(0).to(x.scalar_type()).contiguous() : torch::Tensor();
    const torch::Tensor& gy = grads.at(withBranch ? 1 : 0);
    if (!gy.defined()) { // only the sum was used, or nothing
        if (!withBranch) return {torch::Tensor(), torch::Tensor(), torch::Tensor()};
        return {residual, residual.defined() ? residual.to(torch::kBFloat16) : residual, torch::Tensor(),
                torch::Tensor()};
    }
    const c10::cuda::CUDAGuard guard(x.device());
    const torch::Tensor dy = gy.to(torch::kBFloat16).contiguous();
    const int64_t columns = x.size(-1), rows = x.numel() / columns;
    torch::Tensor dx = torch::empty_like(x);
    torch::Tensor dxBf16 = withBranch ? torch::empty(x.sizes(), x.options().dtype(torch::kBFloat16)) : torch::Tensor();
    torch::Tensor dw = torch::empty({columns}, floatsLike(x));
    torch::Tensor db = torch::empty({columns}, floatsLike(x));
    torch::Tensor scratch = torch::empty({kernels::layerNormBackwardScratch(rows, columns, 1)}, floatsLike(x));
    check(kernels::layerNormBackward(dy.data_ptr(), x.data_ptr(), streamTypeOf(x), w.data_ptr<float>(),
                                     saved[2].data_ptr<float>(), saved[3].data_ptr<float>(), rows, columns, 1,
                                     residual.defined() ? residual.data_ptr() : nullptr, dx.data_ptr(),
                                     dxBf16.defined() ? dxBf16.data_ptr() : nullptr, dw.data_ptr<float>(),
                                     db.data_ptr<float>(), scratch.data_ptr<float>(),
                                     c10::cuda::getCurrentCUDAStream(x.device().index()).stream()),
          "backward");
    if (!withBranch) return {dx, dw, db};
    return {dx, dxBf16, dw, db};
}

struct FusedLayerNorm : public torch::autograd::Function<FusedLayerNorm> {
    static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& input,
                                                  const torch::Tensor& weight, const torch::Tensor& bias, double eps) {
        return fusedForward(ctx, input, torch::Tensor(), weight, bias, eps);
    }
    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                   torch::autograd::variable_list grads) {
        auto out = fusedBackward(ctx, grads, false);
        out.emplace_back(); // eps
        return out;
    }
};

struct FusedAddLayerNorm : public torch::autograd::Function<FusedAddLayerNorm> {
    static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& input,
                                                  const torch::Tensor& branch, const torch::Tensor& weight,
                                                  const torch::Tensor& bias, double eps) {
        return fusedForward(ctx, input, branch, weight, bias, eps);
    }
    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                   torch::autograd::variable_list grads) {
        auto out = fusedBackward(ctx, grads, true);
        out.emplace_back(); // eps
        return out;
    }
};

// adaLN: y = LayerNorm(x) * weight[b] + bias[b] for the rows of sample b; x (B, S, C) float32,
// weight and bias (B, C) float32 (1 + scale and shift, made by the caller so that autograd takes
// their gradients on to scale and shift).
struct FusedModulate : public torch::autograd::Function<FusedModulate> {
    static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& input,
                                                  const torch::Tensor& weight, const torch::Tensor& bias, double eps) {
        const c10::cuda::CUDAGuard guard(input.device());
        const torch::Tensor x = input.contiguous();
        const int64_t groups = x.size(0), columns = x.size(-1), rows = x.numel() / columns;
        torch::Tensor y = torch::empty(x.sizes(), x.options().dtype(torch::kBFloat16));
        torch::Tensor mean = torch::empty({rows}, floatsLike(x));
        torch::Tensor rstd = torch::empty({rows}, floatsLike(x));
        const torch::Tensor w = weight.contiguous(), b = bias.contiguous();
        check(kernels::layerNormForward(x.data_ptr(), streamTypeOf(x), nullptr, nullptr, w.data_ptr<float>(),
                                        b.data_ptr<float>(), rows, columns, groups, eps, y.data_ptr(),
                                        mean.data_ptr<float>(), rstd.data_ptr<float>(),
                                        c10::cuda::getCurrentCUDAStream(x.device().index()).stream()),
              "modulate forward");
        ctx->save_for_backward({x, w, mean, rstd});
        ctx->set_materialize_grads(false);
        return {y};
    }
    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                   torch::autograd::variable_list grads) {
        const torch::Tensor& gy = grads.at(0);
        if (!gy.defined()) return {torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
        const auto saved = ctx->get_saved_variables();
        const torch::Tensor& x = saved[0];
        const c10::cuda::CUDAGuard guard(x.device());
        const torch::Tensor dy = gy.to(torch::kBFloat16).contiguous();
        const int64_t groups = x.size(0), columns = x.size(-1), rows = x.numel() / columns;
        torch::Tensor dx = torch::empty_like(x);
        torch::Tensor dw = torch::empty({groups, columns}, floatsLike(x));
        torch::Tensor db = torch::empty({groups, columns}, floatsLike(x));
        torch::Tensor scratch =
            torch::empty({kernels::layerNormBackwardScratch(rows, columns, groups)}, floatsLike(x));
        check(kernels::layerNormBackward(dy.data_ptr(), x.data_ptr(), streamTypeOf(x), saved[1].data_ptr<float>(),
                                         saved[2].data_ptr<float>(), saved[3].data_ptr<float>(), rows, columns, groups,
                                         nullptr, dx.data_ptr(), nullptr, dw.data_ptr<float>(),
                                         db.data_ptr<float>(), scratch.data_ptr<float>(),
                                         c10::cuda::getCurrentCUDAStream(x.device().index()).stream()),
              "modulate backward");
        return {dx, dw, db, torch::Tensor()}; // eps
    }
};

} // namespace
#endif

bool fusedModulateApplies(const torch::Tensor& x, const torch::Tensor& scale, const torch::Tensor& shift) {
#if PARALLAX_CUDA_KERNELS
    const auto perSample = [&](const torch::Tensor& t) {
        return t.dim() == 3 && t.size(0) == x.size(0) && t.size(1) == 1 && t.size(2) == x.size(2) &&
               t.device() == x.device() && t.is_floating_point();
    };
    return x.is_cuda() && isKernelStreamType(x) && x.dim() == 3 && x.size(0) > 0 &&
           x.size(0) <= kernels::kLayerNormMaxGroups && x.size(2) <= kernels::kLayerNormMaxColumns &&
           perSample(scale) && perSample(shift) && compat::autocastsTo(c10::DeviceType::CUDA, torch::kBFloat16);
#else
    (void)x, (void)scale, (void)shift;
    return false;
#endif
}

torch::Tensor modulate(const torch::Tensor& x, const torch::Tensor& scale, const torch::Tensor& shift, double eps) {
#if PARALLAX_CUDA_KERNELS
    if (fusedModulateApplies(x, scale, shift)) {
        // The factors the composed form multiplies and adds in float32: (1 + scale) as scale's
        // type gives it, then widened.
        const torch::Tensor w = (1 + scale).to(torch::kFloat32).squeeze(1);
        const torch::Tensor b = shift.to(torch::kFloat32).squeeze(1);
        return FusedModulate::apply(x, w, b, eps)[0];
    }
#endif
    return torch::layer_norm(x, {x.size(-1)}, {}, {}, eps) * (1 + scale) + shift;
}

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

std::pair<torch::Tensor, torch::Tensor> addLayerNorm(torch::nn::LayerNormImpl& ln, const torch::Tensor& x,
                                                     const torch::Tensor& branch) {
#if PARALLAX_CUDA_KERNELS
    if (branch.scalar_type() == torch::kBFloat16 && branch.sizes() == x.sizes() && branch.device() == x.device() &&
        fusedLayerNormApplies(ln, x)) {
        const auto out = FusedAddLayerNorm::apply(x, branch, ln.weight, ln.bias, ln.options.eps());
        return {out[0], out[1]};
    }
#endif
    torch::Tensor sum = x + branch;
    torch::Tensor normalized = layerNorm(ln, sum);
    return {sum, normalized};
}

} // namespace parallax

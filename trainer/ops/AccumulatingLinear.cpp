#include "trainer/ops/AccumulatingLinear.h"

#include "trainer/compat/TorchCompat.h"

#include <stdexcept>

#if PARALLAX_CUDA_KERNELS
#include "trainer/kernels/ColumnSum.h"
#include "trainer/kernels/Status.h"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace parallax {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

torch::Tensor stacked(const std::vector<torch::Tensor>& parts) {
    return parts.size() == 1 ? parts.front() : torch::cat(parts);
}

// The input gradient of gelu(u, "tanh") from its output gradient g, both (rows, columns); with a
// bias gradient, the product's bias gradient (the result's column sums) added into it as well.
torch::Tensor geluBackward(const torch::Tensor& g, const torch::Tensor& u, const torch::Tensor& biasGrad) {
#if PARALLAX_CUDA_KERNELS
    if (g.is_cuda() && g.scalar_type() == torch::kBFloat16 && u.scalar_type() == torch::kBFloat16 &&
        g.sizes() == u.sizes() && g.dim() == 2 && g.is_contiguous() && u.is_contiguous() && biasGrad.defined() &&
        biasGrad.scalar_type() == torch::kFloat32 && biasGrad.is_contiguous() && biasGrad.device() == g.device() &&
        biasGrad.numel() == g.size(1)) {
        torch::NoGradGuard noGrad;
        const c10::cuda::CUDAGuard guard(g.device());
        torch::Tensor dx = torch::empty_like(g);
        torch::Tensor scratch = torch::empty({kernels::columnSumScratch(g.size(0), g.size(1))}, biasGrad.options());
        kernels::throwOnError(kernels::geluBackwardColumnSum(g.data_ptr(), u.data_ptr(), g.size(0), g.size(1),
                                                             dx.data_ptr(), biasGrad.data_ptr<float>(),
                                                             scratch.data_ptr<float>(),
                                                             c10::cuda::getCurrentCUDAStream(g.device().index()).stream()),
                              "GELU backward", "with bias column sums");
        return dx;
    }
#endif
    torch::Tensor dx = at::gelu_backward(g, u, "tanh");
    if (biasGrad.defined()) addColumnSums(biasGrad, dx);
    return dx;
}

// A layer's WeightGradDeferral as autograd's saved data can hold it.
struct DeferralCapsule : public torch::CustomClassHolder {
    explicit DeferralCapsule(std::shared_ptr<WeightGradDeferral> d) : deferral(std::move(d)) {}
    std::shared_ptr<WeightGradDeferral> deferral;
};

struct AccumulatingLinearFn : public torch::autograd::Function<AccumulatingLinearFn> {
    // TensorLists so that autograd tracks the weights and biases as inputs.
    // With gelu (one weight): gelu(x W^T + b, "tanh"), the product kept for backward.
    // `products`, `biasProducts`: what each weight's product multiplies by and each bias adds (empty:
    // the weights, the biases); never differentiated.
    // `deferral`: where backward hands the weight gradients over; null: backward adds them itself.
    static variable_list forward(AutogradContext* ctx, const torch::Tensor& x, at::TensorList weights,
                                 at::TensorList biases, at::TensorList products, at::TensorList biasProducts,
                                 bool gelu, const std::shared_ptr<WeightGradDeferral>& deferral) {
        const torch::Tensor input = compat::autocastForProduct(x);
        std::vector<torch::Tensor> w, b;
        for (size_t i = 0; i < weights.size(); ++i)
            w.push_back(compat::autocastForProduct(products.empty() ? weights[i] : products[i]));
        for (size_t i = 0; i < biases.size(); ++i)
            b.push_back(compat::autocastForProduct(biasProducts.empty() ? biases[i] : biasProducts[i]));
        const torch::Tensor weight = stacked(w);
        const torch::Tensor y = torch::linear(input, weight, b.empty() ? torch::Tensor() : stacked(b));
        std::vector<torch::Tensor> saved = {input, weight};
        for (const torch::Tensor& t : weights) saved.push_back(t);
        for (const torch::Tensor& t : biases) saved.push_back(t);
        if (gelu) saved.push_back(y);
        ctx->save_for_backward(saved);
        ctx->saved_data["weights"] = static_cast<int64_t>(weights.size());
        ctx->saved_data["biases"] = static_cast<int64_t>(biases.size());
        ctx->saved_data["gelu"] = gelu;
        ctx->saved_data["products"] = static_cast<int64_t>(products.size() + biasProducts.size());
        if (deferral)
            ctx->saved_data["deferral"] = c10::IValue::make_capsule(c10::make_intrusive<DeferralCapsule>(deferral));
        ctx->set_materialize_grads(false); // an unused slice's gradient stays undefined, not zeros
        if (gelu) return {torch::gelu(y, "tanh")};
        if (weights.size() == 1) return {y};
        // One output per weight, column slices of the one product: backward then gets each layer's
        // gradient by itself, where a single output sliced afterwards would make autograd build a
        // zero-filled gradient of the whole product per slice and add them up.
        variable_list parts;
        int64_t start = 0;
        for (const torch::Tensor& t : weights) {
            parts.push_back(y.narrow(-1, start, t.size(0)));
            start += t.size(0);
        }
        return parts;
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const variable_list saved = ctx->get_saved_variables();
        const torch::Tensor& input = saved[0];
        const torch::Tensor& weight = saved[1];
        const auto nw = static_cast<size_t>(ctx->saved_data["weights"].toInt());
        const auto nb = static_cast<size_t>(ctx->saved_data["biases"].toInt());
        const bool gelu = ctx->saved_data["gelu"].toBool();
        const auto deferred = ctx->saved_data.find("deferral");
        const std::shared_ptr<WeightGradDeferral> deferral =
            deferred == ctx->saved_data.end()
                ? nullptr
                : c10::static_intrusive_pointer_cast<DeferralCapsule>(deferred->second.toCapsule())->deferral;
        const torch::Tensor x2 = input.reshape({-1, input.size(-1)}); // (N, in)
        torch::Tensor dx;                                                // (N, in)
        int64_t start = 0;
        for (size_t i = 0; i < nw; ++i) {
            const torch::Tensor& param = saved[2 + i];
            const int64_t width = param.size(0);
            const torch::Tensor& g = grads.at(i);
            if (g.defined()) {
                torch::Tensor part = g.to(weight.scalar_type()).reshape({-1, width}); // (N, width)
                const torch::Tensor biasGrad = i < nb ? saved[2 + nw + i].grad() : torch::Tensor();
                if (gelu) part = geluBackward(part.contiguous(), saved.back().reshape({-1, width}), biasGrad);
                else if (biasGrad.defined()) addColumnSums(biasGrad, part);
                const torch::Tensor w = weight.narrow(0, start, width); // (width, in)
                dx = dx.defined() ? dx.addmm_(part, w) : part.mm(w);
                // The bias gradient above is a cheap column sum; the weight's is a product as large as
                // the input gradient's, which a split backward runs later in a pass of its own.
                if (deferral) deferral->defer(param.grad(), part, x2);
                else compat::accumulateProduct(param.grad(), part.t(), x2);
            }
            start += width;
        }
        // No gradient for the parameters: they are already in .grad(). Autograd still runs each
        // parameter's accumulator next, with nothing to add, and with it the reducers' hooks.
        variable_list out = {dx.defined() ? dx.view(input.sizes()) : dx};
        // None for the products, the gelu flag and the deferral.
        out.resize(1 + nw + nb + ctx->saved_data["products"].toInt() + 2);
        return out;
    }
};

} // namespace

void addColumnSums(const torch::Tensor& out, const torch::Tensor& x) {
    torch::NoGradGuard noGrad;
#if PARALLAX_CUDA_KERNELS
    if (x.is_cuda() && x.dim() == 2 && x.scalar_type() == torch::kBFloat16 && out.scalar_type() == torch::kFloat32 &&
        out.is_contiguous() && out.device() == x.device() && out.numel() == x.size(1) &&
        (x.stride(1) == 1 || x.size(1) == 1) && x.stride(0) >= x.size(1)) {
        const c10::cuda::CUDAGuard guard(x.device());
        torch::Tensor scratch = torch::empty({kernels::columnSumScratch(x.size(0), x.size(1))}, out.options());
        kernels::throwOnError(kernels::columnSumAccumulate(x.data_ptr(), x.size(0), x.size(1), x.stride(0),
                                                           out.data_ptr<float>(), scratch.data_ptr<float>(),
                                                           c10::cuda::getCurrentCUDAStream(x.device().index()).stream()),
                              "bias gradient", "column sums");
        return;
    }
#endif
    out.add_(torch::sum(x, at::IntArrayRef{0}, /*keepdim=*/false, out.scalar_type()).view_as(out));
}

bool accumulatingLinearApplies(const std::vector<torch::Tensor>& weights, const std::vector<torch::Tensor>& biases) {
    if (!torch::GradMode::is_enabled() || weights.empty()) return false;
    if (!biases.empty() && biases.size() != weights.size()) return false;
    for (const auto* list : {&weights, &biases})
        for (const torch::Tensor& t : *list)
            if (!t.requires_grad() || !t.grad().defined()) return false;
    return true;
}

std::vector<torch::Tensor> accumulatingLinear(const torch::Tensor& x, const std::vector<torch::Tensor>& weights,
                                              const std::vector<torch::Tensor>& biases,
                                              const std::vector<torch::Tensor>& products,
                                              const std::vector<torch::Tensor>& biasProducts,
                                              const std::shared_ptr<WeightGradDeferral>& deferral) {
    if (!products.empty() && products.size() != weights.size())
        throw std::invalid_argument("accumulatingLinear: one product tensor per weight, or none");
    if (!biasProducts.empty() && biasProducts.size() != biases.size())
        throw std::invalid_argument("accumulatingLinear: one product tensor per bias, or none");
    return AccumulatingLinearFn::apply(x, at::TensorList(weights), at::TensorList(biases), at::TensorList(products),
                                       at::TensorList(biasProducts), false, deferral);
}

torch::Tensor accumulatingLinearGelu(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                                     const torch::Tensor& product, const torch::Tensor& biasProduct,
                                     const std::shared_ptr<WeightGradDeferral>& deferral) {
    std::vector<torch::Tensor> biases, products, biasProducts;
    if (bias.defined()) biases.push_back(bias);
    if (product.defined()) products.push_back(product);
    if (bias.defined() && biasProduct.defined()) biasProducts.push_back(biasProduct);
    const std::vector<torch::Tensor> weights{weight};
    return AccumulatingLinearFn::apply(x, at::TensorList(weights), at::TensorList(biases), at::TensorList(products),
                                       at::TensorList(biasProducts), true, deferral)[0];
}

} // namespace parallax

#include "trainer/models/AccumulatingLinear.h"

#include "trainer/compat/TorchCompat.h"

namespace parallax {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

torch::Tensor stacked(const std::vector<torch::Tensor>& parts) {
    return parts.size() == 1 ? parts.front() : torch::cat(parts);
}

struct AccumulatingLinearFn : public torch::autograd::Function<AccumulatingLinearFn> {
    // TensorLists so that autograd tracks the weights and biases as inputs.
    static variable_list forward(AutogradContext* ctx, const torch::Tensor& x, at::TensorList weights,
                                 at::TensorList biases) {
        const torch::Tensor input = compat::autocastForProduct(x);
        std::vector<torch::Tensor> w, b;
        for (const torch::Tensor& t : weights) w.push_back(compat::autocastForProduct(t));
        for (const torch::Tensor& t : biases) b.push_back(compat::autocastForProduct(t));
        const torch::Tensor weight = stacked(w);
        const torch::Tensor y = torch::linear(input, weight, b.empty() ? torch::Tensor() : stacked(b));
        std::vector<torch::Tensor> saved = {input, weight};
        for (const torch::Tensor& t : weights) saved.push_back(t);
        for (const torch::Tensor& t : biases) saved.push_back(t);
        ctx->save_for_backward(saved);
        ctx->saved_data["weights"] = static_cast<int64_t>(weights.size());
        ctx->saved_data["biases"] = static_cast<int64_t>(biases.size());
        return {y};
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const variable_list saved = ctx->get_saved_variables();
        const torch::Tensor& input = saved[0];
        const torch::Tensor& weight = saved[1];
        const auto nw = static_cast<size_t>(ctx->saved_data["weights"].toInt());
        const auto nb = static_cast<size_t>(ctx->saved_data["biases"].toInt());
        const torch::Tensor dy = grads.at(0).to(weight.scalar_type());
        const torch::Tensor dy2 = dy.reshape({-1, dy.size(-1)});   // (N, out)
        const torch::Tensor x2 = input.reshape({-1, input.size(-1)}); // (N, in)
        const torch::Tensor dx = dy.matmul(weight);                  // (.., in)
        int64_t start = 0;
        for (size_t i = 0; i < nw; ++i) {
            const torch::Tensor& param = saved[2 + i];
            const int64_t width = param.size(0);
            const torch::Tensor part = dy2.narrow(1, start, width); // (N, width)
            compat::accumulateProduct(param.grad(), part.t(), x2);
            if (i < nb) {
                const torch::Tensor& bias = saved[2 + nw + i];
                bias.grad().add_(torch::sum(part, at::IntArrayRef{0}, /*keepdim=*/false, bias.grad().scalar_type()));
            }
            start += width;
        }
        // No gradient for the parameters: they are already in .grad(). Autograd still runs each
        // parameter's accumulator next, with nothing to add, and with it the reducers' hooks.
        variable_list out = {dx};
        out.resize(1 + nw + nb);
        return out;
    }
};

} // namespace

bool accumulatingLinearApplies(const std::vector<torch::Tensor>& weights, const std::vector<torch::Tensor>& biases) {
    if (!torch::GradMode::is_enabled() || weights.empty()) return false;
    if (!biases.empty() && biases.size() != weights.size()) return false;
    for (const auto* list : {&weights, &biases})
        for (const torch::Tensor& t : *list)
            if (!t.requires_grad() || !t.grad().defined()) return false;
    return true;
}

torch::Tensor accumulatingLinear(const torch::Tensor& x, const std::vector<torch::Tensor>& weights,
                                 const std::vector<torch::Tensor>& biases) {
    return AccumulatingLinearFn::apply(x, at::TensorList(weights), at::TensorList(biases))[0];
}

} // namespace parallax

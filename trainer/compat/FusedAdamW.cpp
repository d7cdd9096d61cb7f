#include "trainer/compat/FusedAdamW.h"

#include <torch/version.h>

#if PARALLAX_WITH_CUDA && defined(TORCH_VERSION_MAJOR) && \
    (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1))
#define PARALLAX_FUSED_ADAMW 1
#else
#define PARALLAX_FUSED_ADAMW 0
#endif

namespace parallax::compat {

bool fusedAdamWAvailable() {
    return PARALLAX_FUSED_ADAMW != 0;
}

#if PARALLAX_FUSED_ADAMW

namespace {

bool suitable(const std::vector<torch::Tensor>& tensors, const torch::Device& device) {
    for (const torch::Tensor& t : tensors)
        if (!t.defined() || t.device() != device || t.scalar_type() != torch::kFloat) return false;
    return true;
}

} // namespace

bool fusedAdamW(const std::vector<torch::Tensor>& params, const std::vector<torch::Tensor>& grads,
                const std::vector<torch::Tensor>& expAvgs, const std::vector<torch::Tensor>& expAvgSqs, int64_t step,
                double lr, double beta1, double beta2, double weightDecay, double eps, double gradScale) {
    const size_t n = params.size();
    if (n == 0 || grads.size() != n || expAvgs.size() != n || expAvgSqs.size() != n || step < 1) return false;
    const torch::Device device = params.front().device();
    if (!device.is_cuda()) return false;
    if (!suitable(params, device) || !suitable(grads, device) || !suitable(expAvgs, device) ||
        !suitable(expAvgSqs, device))
        return false;

    std::vector<torch::Tensor> p, g, m, v, steps;
    const auto stepOptions = torch::TensorOptions().dtype(torch::kFloat).device(device);
    for (size_t i = 0; i < n; ++i) {
        if (params[i].numel() == 0) continue;
        p.push_back(params[i]);
        g.push_back(grads[i]);
        m.push_back(expAvgs[i]);
        v.push_back(expAvgSqs[i]);
        // The kernel reads the count that the update's bias corrections use (PyTorch's optimizer
        // increments it before the call, as AdamW::step does).
        steps.push_back(torch::full({}, static_cast<double>(step), stepOptions));
    }
    if (p.empty()) return true;
    torch::NoGradGuard noGrad;
    if (gradScale == 1.0) {
        at::_fused_adamw_(p, g, m, v, /*max_exp_avg_sqs=*/{}, steps, lr, beta1, beta2, weightDecay, eps,
                          /*amsgrad=*/false, /*maximize=*/false, /*grad_scale=*/{}, /*found_inf=*/{});
    } else {
        // The kernel divides each gradient by grad_scale (the loss-scale convention).
        const torch::Tensor unscale = torch::full({}, 1.0 / gradScale, stepOptions);
        at::_fused_adamw_(p, g, m, v, /*max_exp_avg_sqs=*/{}, steps, lr, beta1, beta2, weightDecay, eps,
                          /*amsgrad=*/false, /*maximize=*/false, unscale, /*found_inf=*/{});
    }
    return true;
}

#else

bool fusedAdamW(const std::vector<torch::Tensor>&, const std::vector<torch::Tensor>&,
                const std::vector<torch::Tensor>&, const std::vector<torch::Tensor>&, int64_t, double, double, double,
                double, double, double) {
    return false;
}

#endif

} // namespace parallax::compat

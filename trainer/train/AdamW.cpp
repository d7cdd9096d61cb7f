#include "trainer/train/AdamW.h"

#include "trainer/compat/TorchCompat.h"

#if PARALLAX_CUDA_KERNELS
#include "trainer/kernels/AdamW.h"
#include "trainer/kernels/Status.h"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace parallax {

void AdamW::addGroup(torch::Tensor param, torch::Tensor grad, bool decay) {
    Group g;
    g.param = std::move(param);
    g.grad = std::move(grad);
    g.decay = decay;
    g.exp_avg = torch::zeros_like(g.param);
    g.exp_avg_sq = torch::zeros_like(g.param);
    m_groups.push_back(std::move(g));
}

void AdamW::setUpdateOrder(std::vector<size_t> order, std::function<void(size_t group)> afterGroup) {
    std::vector<char> seen(m_groups.size(), 0);
    for (size_t g : order) {
        if (g >= m_groups.size() || seen[g]) throw std::invalid_argument("AdamW update order: group " + std::to_string(g) + " out of range or repeated");
        seen[g] = 1;
    }
    if (!order.empty() && order.size() != m_groups.size())
        throw std::invalid_argument("AdamW update order: " + std::to_string(order.size()) + " groups of " +
                                    std::to_string(m_groups.size()));
    m_order = std::move(order);
    m_afterGroup = std::move(afterGroup);
}

void AdamW::updateInOrder(const std::function<void(Group&)>& update) {
    for (size_t index : order()) {
        Group& g = m_groups[index];
        if (update && g.param.numel() > 0) update(g);
        if (m_afterGroup) m_afterGroup(index);
    }
}

std::vector<size_t> AdamW::order() const {
    if (!m_order.empty()) return m_order;
    std::vector<size_t> all(m_groups.size());
    for (size_t g = 0; g < all.size(); ++g) all[g] = g;
    return all;
}

void AdamW::step(double lr, double gradScale) {
    update(lr, gradScale, {}, {});
}

void AdamW::step(double lr, const torch::Tensor& gradScale, const torch::Tensor& skip) {
    update(lr, 1.0, gradScale, skip);
}

void AdamW::update(double lr, double hostScale, const torch::Tensor& scaleOnDevice, const torch::Tensor& skip) {
    torch::NoGradGuard noGrad;
    ++m_step;
    if (m_options.fused && fusedApplies()) {
        updateFused(lr, hostScale, scaleOnDevice, skip);
        return;
    }
    if (skip.defined() && skip.item<bool>()) {
        updateInOrder(nullptr);
        return;
    }
    const double gradScale = scaleOnDevice.defined() ? scaleOnDevice.item<double>() : hostScale;
    const double b1 = m_options.beta1, b2 = m_options.beta2;
    const double bias1 = 1.0 - std::pow(b1, static_cast<double>(m_step));
    const double bias2 = 1.0 - std::pow(b2, static_cast<double>(m_step));
    const double stepSize = lr / bias1;
    const double invSqrtBias2 = 1.0 / std::sqrt(bias2);
    updateInOrder([&](Group& g) {
        torch::Tensor grad = gradScale == 1.0 ? g.grad : g.grad * gradScale;
        if (g.decay && m_options.weight_decay != 0) g.param.mul_(1.0 - lr * m_options.weight_decay);
        g.exp_avg.mul_(b1).add_(grad, 1.0 - b1);
        g.exp_avg_sq.mul_(b2).addcmul_(grad, grad, 1.0 - b2);
        auto denom = (g.exp_avg_sq.sqrt() * invSqrtBias2).add_(m_options.eps);
        g.param.addcdiv_(g.exp_avg, denom, -stepSize);
    });
}

void AdamW::updateFused(double lr, double hostScale, const torch::Tensor& scaleOnDevice, const torch::Tensor& skip) {
    const auto held = std::find_if(m_groups.begin(), m_groups.end(), [](const Group& g) { return g.param.numel() > 0; });
    if (held == m_groups.end()) { // this rank holds no slice of any parameter
        updateInOrder(nullptr);
        return;
    }
    const auto f32 = held->param.options();
    torch::Tensor scale; // undefined: 1
    if (scaleOnDevice.defined()) scale = scaleOnDevice.to(f32);
    else if (hostScale != 1.0) scale = torch::full({}, hostScale, f32);
    const torch::Tensor found = skip.defined() ? skip.to(f32) : torch::Tensor();
#if PARALLAX_CUDA_KERNELS
    if (!m_options.libtorchKernel) {
        const c10::cuda::CUDAGuard guard(held->param.device());
        const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(held->param.device().index()).stream();
        kernels::AdamWUpdate u;
        u.step = m_step;
        u.lr = lr;
        u.beta1 = m_options.beta1;
        u.beta2 = m_options.beta2;
        u.eps = m_options.eps;
        updateInOrder([&](Group& g) {
            u.weightDecay = g.decay ? m_options.weight_decay : 0.0;
            kernels::throwOnError(kernels::adamWStep(g.param.data_ptr<float>(), g.grad.data_ptr<float>(),
                                                     g.exp_avg.data_ptr<float>(), g.exp_avg_sq.data_ptr<float>(),
                                                     g.param.numel(), u,
                                                     scale.defined() ? scale.data_ptr<float>() : nullptr,
                                                     found.defined() ? found.data_ptr<float>() : nullptr, stream),
                                  "AdamW", "update");
        });
        return;
    }
#endif
    // LibTorch's kernel divides by its scale. One call per weight-decay class.
    const torch::Tensor divisor = scale.defined() ? scale.reciprocal() : scale;
    for (const bool decay : {true, false}) {
        std::vector<torch::Tensor> params, grads, expAvgs, expAvgSqs;
        for (Group& g : m_groups) {
            if (g.decay != decay || g.param.numel() == 0) continue;
            params.push_back(g.param);
            grads.push_back(g.grad);
            expAvgs.push_back(g.exp_avg);
            expAvgSqs.push_back(g.exp_avg_sq);
        }
        compat::fusedAdamW(params, grads, expAvgs, expAvgSqs, m_step, lr, m_options.beta1, m_options.beta2,
                           decay ? m_options.weight_decay : 0.0, m_options.eps, divisor, found);
    }
    updateInOrder(nullptr); // the calls, after the one update of every group
}

bool AdamW::fusedApplies() const {
#if PARALLAX_CUDA_KERNELS
    const bool kernel = !m_options.libtorchKernel || compat::hasFusedAdamW();
#else
    const bool kernel = compat::hasFusedAdamW();
#endif
    if (!kernel || m_groups.empty()) return false;
    for (const Group& g : m_groups) {
        if (g.param.numel() == 0) continue;
        if (!(g.param.is_cuda() && g.param.scalar_type() == torch::kFloat)) return false;
        for (const torch::Tensor* t : {&g.param, &g.grad, &g.exp_avg, &g.exp_avg_sq})
            if (!t->is_contiguous() || t->scalar_type() != torch::kFloat || t->numel() != g.param.numel()) return false;
    }
    return true;
}

double learningRate(int64_t step, int64_t steps, int64_t warmup, double lr, double minLr) {
    if (warmup > 0 && step < warmup) return lr * static_cast<double>(step + 1) / static_cast<double>(warmup);
    const int64_t decaySteps = std::max<int64_t>(1, steps - warmup);
    const double progress = std::min(1.0, static_cast<double>(step - warmup) / static_cast<double>(decaySteps));
    return minLr + 0.5 * (lr - minLr) * (1.0 + std::cos(M_PI * progress));
}

} // namespace parallax

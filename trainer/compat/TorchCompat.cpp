#include "trainer/compat/TorchCompat.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>

// addmm with an fp32 result from bf16/fp16 inputs (the out_dtype overloads).
#if defined(TORCH_VERSION_MAJOR) && (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 9))
#define PARALLAX_ADDMM_OUT_DTYPE 1
#else
#define PARALLAX_ADDMM_OUT_DTYPE 0
#endif

namespace parallax::compat {

torch::Tensor attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, bool causal) {
#if PARALLAX_TORCH2
    return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0, causal);
#else
    const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
    auto scores = torch::matmul(q, k.transpose(-2, -1)) * scale; // (B, H, S, S)
    if (causal) {
        const int64_t s = q.size(-2);
        auto mask = torch::ones({s, k.size(-2)}, torch::TensorOptions().dtype(torch::kBool).device(q.device()))
                        .triu(1);
        scores = scores.masked_fill(mask, -std::numeric_limits<float>::infinity());
    }
    return torch::matmul(torch::softmax(scores, -1), v);
#endif
}

torch::Tensor attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        const torch::Tensor& allowed) {
#if PARALLAX_TORCH2
    return at::scaled_dot_product_attention(q, k, v, allowed, /*dropout_p=*/0.0, /*is_causal=*/false);
#else
    const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
    auto scores = torch::matmul(q, k.transpose(-2, -1)) * scale; // (B, H, S, Sk)
    scores = scores.masked_fill(allowed.logical_not(), -std::numeric_limits<float>::infinity());
    return torch::matmul(torch::softmax(scores, -1), v);
#endif
}

std::shared_ptr<torch::autograd::Node> addPostAccumulateHook(const torch::Tensor& param, std::function<void()> fn) {
    auto acc = torch::autograd::impl::grad_accumulator(param);
    if (!acc) throw std::logic_error("addPostAccumulateHook: tensor is not a leaf that requires grad");
    acc->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [fn = std::move(fn)](const torch::autograd::variable_list& outputs,
                             const torch::autograd::variable_list& /*inputs*/) {
            fn();
            return outputs;
        }));
    return acc;
}

void accumulateProduct(const torch::Tensor& grad, const torch::Tensor& a, const torch::Tensor& b) {
    torch::NoGradGuard noGrad;
    if (a.scalar_type() == grad.scalar_type() && b.scalar_type() == grad.scalar_type()) {
        grad.addmm_(a, b);
        return;
    }
#if PARALLAX_ADDMM_OUT_DTYPE
    // One product accumulating in fp32 into the gradient; should this LibTorch refuse the
    // combination at run time, the composed version below takes over for the rest of the run.
    static std::atomic<bool> outDtypeWorks{true};
    if (outDtypeWorks && grad.is_cuda() && grad.scalar_type() == torch::kFloat32 && grad.is_contiguous()) {
        try {
            torch::Tensor out = grad;
            at::addmm_out(out, grad, a, b, torch::kFloat32);
            return;
        } catch (const c10::Error&) {
            outDtypeWorks = false;
        }
    }
#endif
    grad.add_(at::mm(a, b).to(grad.scalar_type()));
}

bool hasFusedAdamW() { return PARALLAX_TORCH2 != 0; }

void fusedAdamW(const std::vector<torch::Tensor>& params, const std::vector<torch::Tensor>& grads,
                const std::vector<torch::Tensor>& expAvgs, const std::vector<torch::Tensor>& expAvgSqs, int64_t step,
                double lr, double beta1, double beta2, double weightDecay, double eps,
                const torch::Tensor& gradDivisor, const torch::Tensor& skip) {
#if PARALLAX_TORCH2
    if (params.empty()) return;
    const auto options = params.front().options();
    // The kernel reads one step count per tensor; all of them share this update's.
    const torch::Tensor count = torch::full({}, static_cast<double>(step), options);
    const std::vector<torch::Tensor> steps(params.size(), count);
    // grad_scale and found_inf were made for loss scaling; they serve clipping and skipping alike.
    const auto optional = [](const torch::Tensor& t) { return t.defined() ? c10::optional<at::Tensor>(t) : c10::nullopt; };
    at::_fused_adamw_(params, grads, expAvgs, expAvgSqs, /*max_exp_avg_sqs=*/{}, steps, lr, beta1, beta2, weightDecay,
                      eps, /*amsgrad=*/false, /*maximize=*/false, optional(gradDivisor), optional(skip));
#else
    (void)params, (void)grads, (void)expAvgs, (void)expAvgSqs, (void)step, (void)lr, (void)beta1, (void)beta2;
    (void)weightDecay, (void)eps, (void)gradDivisor, (void)skip;
    throw std::logic_error("fusedAdamW: this LibTorch has no fused AdamW (check hasFusedAdamW first)");
#endif
}

void startProfiler(bool cuda) {
    using torch::profiler::impl::ActivityType;
    const torch::profiler::impl::ProfilerConfig config(torch::profiler::impl::ProfilerState::KINETO);
    std::set<ActivityType> activities{ActivityType::CPU};
    if (cuda) activities.insert(ActivityType::CUDA);
    try {
        torch::autograd::profiler::prepareProfiler(config, activities);
        torch::autograd::profiler::enableProfiler(config, activities);
    } catch (const c10::Error& e) {
        throw std::runtime_error(e.what_without_backtrace()); // LibTorch's message, without its stack
    }
}

void stopProfiler(const std::string& chromeTracePath) {
    try {
        auto result = torch::autograd::profiler::disableProfiler();
        if (!result) throw std::runtime_error("the profiler returned no result");
        result->save(chromeTracePath);
    } catch (const c10::Error& e) {
        throw std::runtime_error(e.what_without_backtrace());
    }
}

torch::Generator makeGenerator(uint64_t seed) {
    return at::make_generator<at::CPUGeneratorImpl>(seed);
}

void releaseStorage(const torch::Tensor& t) {
    t.storage().unsafeGetStorageImpl()->reset();
}

void restoreStorage(const torch::Tensor& t) {
    c10::StorageImpl* impl = t.storage().unsafeGetStorageImpl();
    const size_t bytes = static_cast<size_t>(t.storage_offset() + t.numel()) * t.element_size();
    if (impl->nbytes() >= bytes) return;
    impl->set_data_ptr_noswap(impl->allocator()->allocate(bytes));
    impl->set_nbytes(bytes);
}

bool storageAllocated(const torch::Tensor& t) {
    return t.storage().nbytes() > 0;
}

namespace {

bool autocastEnabled(c10::DeviceType device) {
#if PARALLAX_TORCH2
    return at::autocast::is_autocast_enabled(device);
#else
    return device == c10::DeviceType::CUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}

void setAutocastEnabled(c10::DeviceType device, bool enabled) {
#if PARALLAX_TORCH2
    at::autocast::set_autocast_enabled(device, enabled);
#else
    if (device == c10::DeviceType::CUDA)
        at::autocast::set_enabled(enabled);
    else
        at::autocast::set_cpu_enabled(enabled);
#endif
}

at::ScalarType autocastType(c10::DeviceType device) {
#if PARALLAX_TORCH2
    return at::autocast::get_autocast_dtype(device);
#else
    return device == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype()
                                           : at::autocast::get_autocast_cpu_dtype();
#endif
}

void setAutocastType(c10::DeviceType device, at::ScalarType dtype) {
#if PARALLAX_TORCH2
    at::autocast::set_autocast_dtype(device, dtype);
#else
    if (device == c10::DeviceType::CUDA)
        at::autocast::set_autocast_gpu_dtype(dtype);
    else
        at::autocast::set_autocast_cpu_dtype(dtype);
#endif
}

} // namespace

AutocastScope::AutocastScope(c10::DeviceType device, at::ScalarType dtype, bool enabled)
    : m_device(device), m_enabled(enabled) {
    if (!m_enabled) return;
    m_previous = autocastEnabled(device);
    m_previousType = autocastType(device);
    setAutocastEnabled(device, true);
    setAutocastType(device, dtype);
    at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
    if (!m_enabled) return;
    // Cached casts of the weights belong to this step; drop them when the outermost scope ends.
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    setAutocastEnabled(m_device, m_previous);
    setAutocastType(m_device, m_previousType);
}

bool autocastsTo(c10::DeviceType device, at::ScalarType dtype) {
    return autocastEnabled(device) && autocastType(device) == dtype;
}

torch::Tensor autocastForProduct(const torch::Tensor& t) {
    const c10::DeviceType device = t.device().type();
    if (!t.is_floating_point() || !autocastEnabled(device)) return t;
    const at::ScalarType type = autocastType(device);
    if (t.scalar_type() == type) return t;
    // Through autocast's cache, so a weight is cast once per step however many micro-batches use it.
    // The copy has no autograd history (this runs inside an autograd function); that is safe because
    // a weight takes the same path, this one, for every use in the step.
    return at::autocast::cached_cast(type, t, device);
}

} // namespace parallax::compat

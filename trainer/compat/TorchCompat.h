#pragma once

// The one place where differences between LibTorch versions (1.13 on Debian, 2.x elsewhere) are
// handled. Everything else in the trainer calls these helpers.

#include <torch/torch.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <ATen/autocast_mode.h>

#include <functional>
#include <string>
#include <vector>

#if defined(TORCH_VERSION_MAJOR) && TORCH_VERSION_MAJOR >= 2
#define PARALLAX_TORCH2 1
#else
#define PARALLAX_TORCH2 0
#endif

namespace parallax::compat {

// softmax(q k^T * scale + causal mask) v for (B, H, S, D) inputs. LibTorch 2.x uses the fused
// scaled_dot_product_attention (flash / memory-efficient kernels on CUDA); 1.13 composes it.
torch::Tensor attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, bool causal);
// The same with an explicit mask (B or 1, 1, S, Sk) of booleans, true where a query may attend a
// key (a causal mask and the keys of padding combined by the caller). No row may be all false.
torch::Tensor attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        const torch::Tensor& allowed);

// Runs `fn` after autograd has accumulated a gradient into `param.grad()` (the parameter's
// AccumulateGrad node's post hook), as PyTorch's own DDP reducer does. The node also runs when the
// function before it returned no gradient for the parameter because it added it into .grad() itself
// (the accumulating Linear), so `fn` fires once per backward either way. The tensor holds its
// accumulator only weakly: keep the returned node alive as long as the hook must fire.
std::shared_ptr<torch::autograd::Node> addPostAccumulateHook(const torch::Tensor& param, std::function<void()> fn);

// grad += a b for 2-d a, b: the weight gradient of a matrix product added into the parameter's fp32
// gradient. With bf16 or fp16 a and b the product accumulates in fp32 inside the matrix product where
// this LibTorch can write an fp32 result from them (addmm with out_dtype); elsewhere through a product
// in their dtype and an add.
void accumulateProduct(const torch::Tensor& grad, const torch::Tensor& a, const torch::Tensor& b);

// `t` as the enclosing autocast scope would hand it to a matrix product on its device: in the autocast
// dtype (leaf parameters through autocast's per-step cache) when autocast is on for that device and
// t is floating point; t itself otherwise.
torch::Tensor autocastForProduct(const torch::Tensor& t);

// Whether an autocast scope is on for `device` with `dtype` as its compute type.
bool autocastsTo(c10::DeviceType device, at::ScalarType dtype);

// A generator seeded with `seed` (CPU), for deterministic initialization and per-sample draws.
torch::Generator makeGenerator(uint64_t seed);

// Frees the memory behind `t` (and every view of its storage) while keeping the tensor objects,
// their shapes and autograd's references to them; restoreStorage() allocates it again. ZeRO-3
// uses them to hold whole parameters only while a unit runs.
void releaseStorage(const torch::Tensor& t);
void restoreStorage(const torch::Tensor& t);
bool storageAllocated(const torch::Tensor& t);

// AdamW over lists of fp32 CUDA tensors in one fused kernel per call, where hasFusedAdamW() (LibTorch
// 2.x). `step` is this update's number (1 for the first), for the bias corrections. Both tensors
// are optional 0-dim fp32 tensors on the parameters' device, read by the kernel itself (no copy to
// the host): every gradient is divided by `gradDivisor` first, and nothing is updated where
// `skip` is non-zero.
bool hasFusedAdamW();
void fusedAdamW(const std::vector<torch::Tensor>& params, const std::vector<torch::Tensor>& grads,
                const std::vector<torch::Tensor>& expAvgs, const std::vector<torch::Tensor>& expAvgSqs, int64_t step,
                double lr, double beta1, double beta2, double weightDecay, double eps,
                const torch::Tensor& gradDivisor, const torch::Tensor& skip);

// The Kineto profiler for a window of steps: operators on the CPU and, with `cuda`, the CUDA
// runtime and kernels. stopProfiler writes a Chrome trace (chrome://tracing, Perfetto). Failures
// (no Kineto in this LibTorch, an unwritable path) throw std::runtime_error with LibTorch's message.
void startProfiler(bool cuda);
void stopProfiler(const std::string& chromeTracePath);

// Mixed precision for a scope: matrix products and attention run in `dtype` (bf16) on `device`'s
// kind while parameters, their gradients and the optimizer stay fp32. Restores the previous state.
class AutocastScope {
public:
    AutocastScope(c10::DeviceType device, at::ScalarType dtype, bool enabled);
    ~AutocastScope();
    AutocastScope(const AutocastScope&) = delete;
    AutocastScope& operator=(const AutocastScope&) = delete;

private:
    c10::DeviceType m_device;
    bool m_enabled;
    bool m_previous = false;
    at::ScalarType m_previousType = at::kFloat;
};

} // namespace parallax::compat

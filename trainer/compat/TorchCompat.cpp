#include "trainer/compat/TorchCompat.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/variable.h>

#include <cmath>
#include <stdexcept>

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

torch::Generator makeGenerator(uint64_t seed) {
    return at::make_generator<at::CPUGeneratorImpl>(seed);
}

} // namespace parallax::compat

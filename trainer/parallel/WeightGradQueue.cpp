#include "trainer/parallel/WeightGradQueue.h"

#include "trainer/compat/TorchCompat.h"

#include <stdexcept>
#include <string>

namespace parallax {

void WeightGradQueue::beginBackward(int microbatch) {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_microbatch >= 0)
        throw std::logic_error("weight gradients of micro-batch " + std::to_string(microbatch) +
                               " while the backward of " + std::to_string(m_microbatch) + " runs");
    m_microbatch = microbatch;
}

void WeightGradQueue::endBackward() {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_microbatch = -1;
}

void WeightGradQueue::add(const Product& p) {
    torch::NoGradGuard noGrad;
    compat::accumulateProduct(p.grad, p.outputGrad.t(), p.input);
}

void WeightGradQueue::defer(const torch::Tensor& grad, const torch::Tensor& outputGrad, const torch::Tensor& input) {
    // Detached: the products keep the values, not the graph that made them.
    Product p{grad, outputGrad.detach(), input.detach()};
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        if (m_microbatch >= 0) {
            m_waiting[m_microbatch].push_back(std::move(p));
            return;
        }
    }
    add(p);
}

size_t WeightGradQueue::run(int microbatch) {
    std::vector<Product> products;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        auto it = m_waiting.find(microbatch);
        if (it == m_waiting.end()) return 0;
        products = std::move(it->second);
        m_waiting.erase(it);
    }
    for (const Product& p : products) add(p);
    return products.size();
}

size_t WeightGradQueue::pending() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    size_t n = 0;
    for (const auto& [micro, products] : m_waiting) n += products.size();
    return n;
}

} // namespace parallax

#pragma once

#include "trainer/ops/WeightGradDeferral.h"

#include <torch/torch.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

namespace parallax {

// The Linear layers' weight gradients of one pipeline chunk, for a schedule that splits the backward
// (zb1): while the pipeline engine runs micro-batch m's backward (B), between beginBackward(m) and
// endBackward(), every product of the chunk that accumulates its weight gradient hands it here
// instead of computing it, and the engine's W pass of m computes them (run(m)). A gradient handed
// over outside such a backward is computed at once, so a layer that holds the queue is never wrong.
class WeightGradQueue : public WeightGradDeferral {
public:
    void beginBackward(int microbatch);
    void endBackward();
    void defer(const torch::Tensor& grad, const torch::Tensor& outputGrad, const torch::Tensor& input) override;
    // Adds micro-batch m's weight gradients, in the order backward handed them over (the order one
    // backward would have added them in); returns how many products that took.
    size_t run(int microbatch);
    // Products handed over and not yet run, over all micro-batches.
    size_t pending() const;

private:
    struct Product {
        torch::Tensor grad;       // (out, in), the weight's .grad()
        torch::Tensor outputGrad; // (N, out)
        torch::Tensor input;      // (N, in)
    };
    static void add(const Product& p);

    // On a GPU, autograd runs backward (and so defer()) on a thread of its own.
    mutable std::mutex m_mutex;
    int m_microbatch = -1; // whose backward runs now; -1: none
    std::map<int, std::vector<Product>> m_waiting;
};

} // namespace parallax

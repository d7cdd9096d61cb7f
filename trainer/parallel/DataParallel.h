#pragma once

#include "trainer/comm/Communicator.h"
#include "trainer/parallel/GradBuckets.h"

#include <torch/csrc/autograd/function.h>

#include <memory>
#include <vector>

namespace parallax {

// Data-parallel gradient reduction with buckets overlapped with backward: a hook on each
// parameter's gradient accumulator counts arrivals; once every parameter of a bucket has received
// all the gradients of the step (one per micro-batch), the bucket's all-reduce starts while
// backward goes on with earlier layers and micro-batches. Gradients are summed (the loss is already
// normalized by the global batch).
class DataParallel {
public:
    DataParallel(GradBuckets& buckets, std::shared_ptr<Communicator> dp);

    // Call before a step's first backward; each parameter will receive `arrivalsPerParam` gradients
    // (the micro-batches of the step).
    void beginStep(int arrivalsPerParam);
    // Call after the last backward of a step: starts buckets whose gradients never arrived (unused
    // parameters keep zero gradients) and waits for every reduction.
    void finishStep();

    int64_t bucketsLaunchedDuringBackward() const { return m_launchedEarly; }

private:
    void onGradReady(int bucket);
    void launch(int bucket);

    GradBuckets& m_buckets;
    std::shared_ptr<Communicator> m_dp;
    std::vector<std::shared_ptr<torch::autograd::Node>> m_accumulators; // keeps the hooks alive
    std::vector<int> m_arrived;
    std::vector<int> m_expected;
    std::vector<std::shared_ptr<Work>> m_work;
    bool m_active = false;
    int64_t m_launchedEarly = 0;
};

} // namespace parallax

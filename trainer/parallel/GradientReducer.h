#pragma once

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>

namespace parallax {

// How gradients of the data-parallel replicas meet and which slice of every bucket this rank's
// optimizer updates: DataParallel (plain, ZeRO-1, ZeRO-2) and Zero3 implement it.
class GradientReducer {
public:
    virtual ~GradientReducer() = default;
    // Before a step's first backward; every parameter will receive `arrivalsPerParam` gradients.
    virtual void beginStep(int arrivalsPerParam) = 0;
    // After each micro-batch's backward on this rank.
    virtual void afterMicroBatch() {}
    // After the step's last backward: every reduction complete.
    virtual void finishStep() = 0;
    // After the optimizer updated the slices: whole parameters where the layout keeps them.
    virtual void afterOptimizerStep() {}

    // The slice of bucket `b` this rank updates, as offsets into the bucket's flat buffers.
    virtual int64_t shardOffset(size_t b) const = 0;
    virtual int64_t shardLength(size_t b) const = 0;
    virtual torch::Tensor paramShard(size_t b) const = 0;
    virtual torch::Tensor gradShard(size_t b) const = 0;
    // Sum of squares of the reduced gradients this rank holds (tensor-parallel replicated buckets
    // only when `includeReplicated`) as a 1-element float64 tensor on their device, undefined when it
    // holds none (sumOfSquares), and whether those are slices of the data-parallel group (so the
    // norm must also be summed over it).
    virtual torch::Tensor gradNormSquared(bool includeReplicated) const = 0;
    virtual bool gradientsSliced() const = 0;
    // Whether every data-parallel rank holds only its slice of the optimizer state.
    virtual bool optimizerSliced() const = 0;
};

} // namespace parallax

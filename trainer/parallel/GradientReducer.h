#pragma once

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace parallax {

struct ParamSlot;
class GradBuckets;

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
    // Bucket `b`'s reduced gradient as this rank holds it after finishStep(): the whole bucket, or
    // its slice where the layout slices gradients. The norm reads it; gradShard(b) lies within it.
    virtual torch::Tensor reducedGrads(size_t b) const = 0;
    // Sum of squares of the reduced gradients this rank holds (buckets of tied copies excepted) (tensor-parallel replicated buckets
    // only when `includeReplicated`) as a 1-element float64 tensor on their device, undefined when it
    // holds none (sumOfSquares), and whether those are slices of the data-parallel group (so the
    // norm must also be summed over it).
    virtual torch::Tensor gradNormSquared(bool includeReplicated) const = 0;
    virtual bool gradientsSliced() const = 0;
    // Whether every data-parallel rank holds only its slice of the optimizer state.
    virtual bool optimizerSliced() const = 0;

    // How the optimizer goes over the slices (paramShard/gradShard, one group per bucket).
    struct OptimizerPlan {
        std::vector<size_t> order;                       // the groups' update order; empty: their own
        std::function<void(size_t bucket)> afterGroup;   // after each group's update is queued
        bool ownStream = false; // the update on a stream of its own where the device has one (setStreamHooks)
    };
    virtual OptimizerPlan optimizerPlan() { return {}; }
    // Where the optimizer runs on a stream of its own (trainer/train/OptimizerStream.h):
    // `afterUnitUpdated(unit)` when the optimizer has queued the update of all of a unit's slices;
    // `beforeGather(unit)` before the unit's parameters are gathered from its slices (the current
    // stream must not read them before their update); `beforeGradWrite()` before the first write of a
    // step into the gradient slices (the update reads them).
    struct StreamHooks {
        std::function<void(int unit)> afterUnitUpdated;
        std::function<void(int unit)> beforeGather;
        std::function<void()> beforeGradWrite;
    };
    virtual void setStreamHooks(StreamHooks) {}
    // Right before the optimizer step; `anotherFollows`: a next step will run.
    virtual void beforeOptimizerStep(bool /*anotherFollows*/) {}

    // Writes a parameter's values (flat, its whole local tensor) wherever this reducer keeps them:
    // the whole buckets, or this rank's slices.
    virtual void loadParameterValues(const ParamSlot& slot, const torch::Tensor& flat) = 0;
    // After parameter values were written otherwise than by the optimizer (a checkpoint loaded).
    virtual void parametersLoaded() {}
    // A line for the log on what this rank holds between steps; empty: nothing to say.
    virtual std::string residencyNote() const { return {}; }
};

// What gradNormSquared returns, from `reducer`'s reducedGrads of `buckets`' buckets: tensor-parallel
// replicated ones only when `includeReplicated`, tied copies never.
torch::Tensor reducedNormSquared(const GradientReducer& reducer, const GradBuckets& buckets, bool includeReplicated);

} // namespace parallax

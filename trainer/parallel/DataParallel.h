#pragma once

#include "trainer/comm/Communicator.h"
#include "trainer/parallel/GradBuckets.h"
#include "trainer/parallel/GradientReducer.h"
#include "trainer/parallel/ProductCopies.h"

#include <torch/csrc/autograd/function.h>

#include <memory>
#include <vector>

namespace parallax {

// Data-parallel gradient reduction with buckets overlapped with backward: a hook on each
// parameter's gradient accumulator counts arrivals; once every parameter of a bucket (and of every
// bucket before it) has received all the gradients of the step (one per micro-batch), the bucket's
// reduction starts while backward goes on with earlier layers and micro-batches. Buckets hold only
// parameters that train (GradBuckets); one whose parameters get no gradient reduces zeros at the end. Gradients are summed (the loss is already
// normalized by the global batch).
//
// ZeRO stages 1 and 2 shard the optimizer's work over the data-parallel group: each rank updates
// an equal slice of every bucket (buckets are padded to a multiple of dp). Stage 1 all-reduces the
// gradients; stage 2 reduce-scatters them so that each rank receives only its slice. After the
// update, afterOptimizerStep() all-gathers the slices so every rank holds the whole parameters again.
class DataParallel : public GradientReducer {
public:
    // `reduceType`: the dtype gradients cross the wire in (parallel.reduce_dtype). When it is not the
    // buckets' (fp32), a cast copy is reduced and the result cast back into the buckets.
    DataParallel(GradBuckets& buckets, std::shared_ptr<Communicator> dp, int zeroStage = 0,
                 torch::ScalarType reduceType = torch::kFloat);

    // Call before a step's first backward: zeroes the buckets' gradients; each parameter will
    // receive `arrivalsPerParam` gradients (the micro-batches of the step).
    void beginStep(int arrivalsPerParam) override;
    // Call after the last backward of a step: starts buckets whose gradients never arrived (unused
    // parameters keep zero gradients) and waits for every reduction.
    void finishStep() override;
    // ZeRO 1 and 2: brings every rank's updated slice to all ranks. Then the product copies follow.
    void afterOptimizerStep() override;
    void parametersLoaded() override;
    // The products read these copies of the parameters from now on; refreshed after every update
    // and load (ProductCopies).
    void useProductCopies(std::unique_ptr<ProductCopies> copies);
    const ProductCopies* productCopies() const { return m_productCopies.get(); }

    int zeroStage() const { return m_stage; }
    // The slice of bucket `b` this rank's optimizer updates: all of it without ZeRO.
    int64_t shardOffset(size_t b) const override;
    int64_t shardLength(size_t b) const override;
    torch::Tensor paramShard(size_t b) const override;
    // Reduced gradients of that slice (a view of the bucket, or stage 2's own buffer).
    torch::Tensor gradShard(size_t b) const override;
    torch::Tensor reducedGrads(size_t b) const override;
    // Sum of squares of the reduced gradients this rank holds: the whole buckets (stages 0, 1), its
    // slices (stage 2). Replicated tensor-parallel parameters only when `includeReplicated`.
    torch::Tensor gradNormSquared(bool includeReplicated) const override;
    bool gradientsSliced() const override { return m_stage == 2 && dpSize() > 1; }
    bool optimizerSliced() const override { return m_stage >= 1 && dpSize() > 1; }
    // Every rank keeps the whole parameters in the buckets.
    void loadParameterValues(const ParamSlot& slot, const torch::Tensor& flat) override;

    int64_t bucketsLaunchedDuringBackward() const { return m_launchedEarly; }
    // Every bucket starts reducing in finishStep(), none during backward: for gradients added after
    // the parameters' accumulators ran, which the arrival count cannot see (the W passes of a
    // schedule that splits the backward, PipelineEngine).
    void reduceAtFinishOnly() { m_launchDuringBackward = false; }

private:
    void onGradReady(int bucket);
    void launch(int bucket);
    int dpSize() const { return m_dp ? m_dp->size() : 1; }
    int dpRank() const { return m_dp ? m_dp->rank() : 0; }

    GradBuckets& m_buckets;
    std::shared_ptr<Communicator> m_dp;
    int m_stage;
    std::vector<std::shared_ptr<torch::autograd::Node>> m_accumulators; // keeps the hooks alive
    std::vector<int> m_arrived;
    std::vector<int> m_expected;
    size_t m_nextLaunch = 0; // buckets before it have started reducing this step
    std::vector<std::shared_ptr<Work>> m_work;
    std::vector<torch::Tensor> m_gradShards; // stage 2
    torch::ScalarType m_reduceType;
    std::vector<torch::Tensor> m_wireIn, m_wireOut; // per bucket: cast copies while a reduction runs
    bool m_active = false;
    bool m_launchDuringBackward = true;
    int64_t m_launchedEarly = 0;
    std::unique_ptr<ProductCopies> m_productCopies;
};

} // namespace parallax

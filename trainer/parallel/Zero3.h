#pragma once

#include "trainer/comm/Communicator.h"
#include "trainer/models/Linear.h"
#include "trainer/parallel/GradBuckets.h"
#include "trainer/parallel/GradientReducer.h"
#include "trainer/parallel/PipelineEngine.h"

#include <torch/csrc/autograd/function.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <memory>
#include <vector>

namespace parallax {

// ZeRO stage 3 (fully sharded data parallel) per model unit. Every rank keeps 1/dp of each unit's
// parameters, gradients and optimizer state. A unit's whole parameters are all-gathered right
// before its forward (the next unit's gather is started early, so it overlaps this unit's work) and
// freed after it, except its vectors (biases, norm gains), which are small and stay until its
// backward; the rest gathered again when backward reaches the unit (prefetching the unit before it);
// once the unit's gradients of a micro-batch are complete they are reduce-scattered into this
// rank's slice and the whole gradients and parameters are freed. Buckets must be per unit and
// padded to a multiple of dp (BucketOptions::perUnit, padMultiple).
class Zero3 : public GradientReducer {
public:
    // `reduceType`: the dtype gradients are reduce-scattered in (parallel.reduce_dtype); a cast copy
    // when it is not the buckets' (fp32), the slices added back in fp32.
    Zero3(GradBuckets& buckets, std::shared_ptr<Communicator> dp, torch::ScalarType reduceType = torch::kFloat);
    ~Zero3() override;

    // Puts gathering wrappers around the chunks' units that hold trainable parameters.
    void wrapUnits(std::vector<StageChunk>& chunks);

    // Parameters whose values backward never reads: a lookup table (an embedding's backward needs
    // only the indices); under bf16 autocast a Linear weight, which enters its products as a cast
    // copy that autograd keeps. Buckets made of such parameters alone are gathered for the forward
    // only, never for backward. Not with activation checkpointing, whose recomputation reads them.
    void setForwardOnlyParameters(const std::set<std::string>& names);
    // Forward-only buckets of `names` alone (Linear weights) are then gathered for forward in `type`
    // (bf16 under bf16 autocast), half the traffic of their fp32 whole, which is never rebuilt: each rank keeps a `type` copy of its
    // slice, cast when the optimizer has updated the slice (shardUpdated), and the gathered values
    // reach the products as their layers' copies (Linear::product_weight) until the unit's forward
    // ends. Only for parameters read through the products alone: `layers` maps a weight's name
    // ("units.3.q.weight") to the Linear that multiplies by it.
    void useProductCopies(torch::ScalarType type, const std::map<std::string, Linear*>& layers);
    // How many layers hold a product copy now (only while their unit's forward runs).
    size_t productCopiesSet() const;
    // Casts every product slice again from the fp32 slices (after these were written otherwise than
    // by the optimizer, e.g. loaded from a checkpoint).
    void refreshProductCopies();

    void beginStep(int arrivalsPerParam) override;
    void afterMicroBatch() override;
    void finishStep() override;
    int64_t shardOffset(size_t b) const override;
    int64_t shardLength(size_t b) const override;
    torch::Tensor paramShard(size_t b) const override { return m_paramShards[b]; }
    torch::Tensor gradShard(size_t b) const override { return m_gradShards[b]; }
    torch::Tensor reducedGrads(size_t b) const override { return m_gradShards[b]; }
    torch::Tensor gradNormSquared(bool includeReplicated) const override;
    bool gradientsSliced() const override { return dpSize() > 1; }
    bool optimizerSliced() const override { return dpSize() > 1; }

    // Bucket indices in the order this rank's units run forward: the optimizer updates the slices in
    // this order, so that the first units are ready first.
    std::vector<size_t> forwardBucketOrder() const;
    // With `on`, the first kPrefetchUnits units of the forward order start gathering (on the
    // communication stream, after their update) as soon as the optimizer has queued the update of
    // all their slices (shardUpdated), so that the next step's first units are not gathered while
    // the GPU waits. Off before a step that no other follows.
    static constexpr int kPrefetchUnits = 2;
    void prefetchNextForward(bool on) { m_prefetchNext = on; }
    void shardUpdated(size_t bucket);

    // With the optimizer on a stream of its own (StreamHooks), gradient slices are written, not
    // zeroed and added to: the first reduced part of a step is copied in, and slices no gradient
    // reached are zeroed at finishStep().
    void setStreamHooks(StreamHooks hooks) override { m_hooks = std::move(hooks); }
    // Slices updated in forward order, the first units gathered for the next step right after their
    // update (shardUpdated), on a stream of its own.
    OptimizerPlan optimizerPlan() override;
    void beforeOptimizerStep(bool anotherFollows) override { prefetchNextForward(anotherFollows); }
    void loadParameterValues(const ParamSlot& slot, const torch::Tensor& flat) override;
    void parametersLoaded() override { refreshProductCopies(); }
    std::string residencyNote() const override;

    // Parameter values this rank has in memory now: its slices plus any unit gathered whole (in fp32
    // or as product copies), except units gathered ahead for the next step
    // (prefetchedParameterValues()). The product copies of the slices are not counted.
    int64_t residentParameterValues() const;
    int64_t prefetchedParameterValues() const;
    int64_t totalParameterValues() const;

    // Called by the unit wrappers and the backward hooks.
    void gatherForForward(int unit);
    void releaseAfterForward(int unit);
    void gatherForBackward(int unit);

private:
    struct UnitState {
        std::vector<size_t> buckets;
        int slots = 0;        // parameters: gradients expected per micro-batch
        int arrived = 0;
        bool gathered = false;      // in use by a forward or backward pass
        std::vector<char> present;  // per bucket: whole parameters restored (gather issued or done)
        bool gradsLive = false;
        bool prefetched = false;    // gathered ahead, after the optimizer, for the next forward
        size_t updated = 0;         // slices updated by the optimizer this step
        std::vector<std::shared_ptr<Work>> gathering;
        std::vector<torch::Tensor> gatherInputs;
        std::vector<std::shared_ptr<Work>> reducing;
        std::vector<torch::Tensor> reduced; // per bucket: this rank's reduce-scattered slice
        std::vector<torch::Tensor> wireIn;  // per bucket: the cast copy being reduced (reduceType)
        std::vector<char> inPlace;          // per bucket: reduced straight into the gradient slice
    };
    int dpSize() const { return m_dp ? m_dp->size() : 1; }
    void startGather(int unit, bool forBackward);
    // Casts bucket b's fp32 slice into its product slice, if it has one.
    void castProductShard(size_t b);
    // Gathers the unit's i-th bucket (forward-only) in the products' type and hands its parameters their copies.
    void gatherProductCopies(UnitState& u, size_t i);
    int64_t wholeParameterValues(bool prefetched) const;
    // Adds `part` into bucket b's gradient slice (copies it, the first time in a step).
    void accumulateGradShard(size_t b, const torch::Tensor& part);
    void beforeGradWrite();
    void waitGather(int unit, bool forBackward);
    // With `keepVectors` (the end of a unit's forward), buckets of vectors (biases, norm gains: no
    // weight decay) stay: they are small, and backward then finds them without a gather queued
    // behind the reductions on the communicator.
    void releaseParams(UnitState& u, bool keepVectors);
    bool allNamed(size_t bucket, const std::set<std::string>& names) const;
    void startReduce(int unit);
    void completeReduce(int unit, bool keepVectors);
    void onGradReady(int unit);
    int neighbour(int unit, int direction) const;

    GradBuckets& m_buckets;
    std::shared_ptr<Communicator> m_dp;
    std::vector<torch::Tensor> m_paramShards;
    std::vector<torch::Tensor> m_gradShards;
    torch::ScalarType m_reduceType;
    std::vector<char> m_forwardOnly; // per bucket: not gathered for backward
    std::vector<torch::Tensor> m_productShards; // per bucket: this rank's slice cast for the products
    std::vector<torch::Tensor> m_productWholes; // per bucket: the gathered product copy, while present
    std::vector<Linear*> m_productLayers;       // per slot: the layer its product copy goes to, or none
    std::map<int, UnitState> m_units;
    std::vector<int> m_order; // local units in forward order
    bool m_prefetchNext = false;
    StreamHooks m_hooks;
    std::vector<char> m_gradWritten; // per bucket: its slice was written in this step
    bool m_gradWriteWaited = false;
    std::vector<std::shared_ptr<torch::autograd::Node>> m_accumulators;
};

} // namespace parallax

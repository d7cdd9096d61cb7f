#include "trainer/train/OptimizerSetup.h"

#include "trainer/parallel/GradBuckets.h"
#include "trainer/parallel/GradientReducer.h"

namespace parallax {

OptimizerSetup setUpOptimizer(const TrainSpec& train, ParallelModel& parallel, const torch::Device& device) {
    AdamWOptions o;
    o.beta1 = train.beta1;
    o.beta2 = train.beta2;
    o.eps = train.eps;
    o.weight_decay = train.weight_decay;
    OptimizerSetup setup;
    setup.optimizer = std::make_unique<AdamW>(o);
    GradientReducer& reducer = *parallel.reducer;
    const GradBuckets& buckets = *parallel.buckets;
    for (size_t b = 0; b < buckets.buckets().size(); ++b)
        setup.optimizer->addGroup(reducer.paramShard(b), reducer.gradShard(b), buckets.buckets()[b].decay);
    GradientReducer::OptimizerPlan plan = reducer.optimizerPlan();
    if (!plan.order.empty()) setup.optimizer->setUpdateOrder(std::move(plan.order), std::move(plan.afterGroup));
    if (plan.ownStream) setup.stream = OptimizerStream::forDevice(device);
    if (setup.stream) {
        OptimizerStream* stream = setup.stream.get();
        GradientReducer::StreamHooks hooks;
        hooks.afterUnitUpdated = [stream](int unit) { stream->unitUpdated(unit); };
        hooks.beforeGather = [stream](int unit) { stream->waitUnit(unit); };
        hooks.beforeGradWrite = [stream] { stream->waitAll(); };
        reducer.setStreamHooks(std::move(hooks));
    }
    return setup;
}

} // namespace parallax

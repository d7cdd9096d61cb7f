#pragma once

#include "core/spec/RunSpec.h"
#include "trainer/parallel/Parallelize.h"
#include "trainer/train/AdamW.h"
#include "trainer/train/OptimizerStream.h"

#include <memory>

namespace parallax {

// AdamW over the reducer's parameter and gradient shards, one group per bucket, in the order and
// with the calls after each group that the reducer's plan asks for; on the optimizer's own stream
// where the plan wants one and the device has streams (then the reducer's gathers and gradient
// writes wait on that stream through its hooks).
struct OptimizerSetup {
    std::unique_ptr<AdamW> optimizer;
    std::unique_ptr<OptimizerStream> stream; // null: the update runs on the compute stream
};
OptimizerSetup setUpOptimizer(const TrainSpec& train, ParallelModel& parallel, const torch::Device& device);

} // namespace parallax

#pragma once

#include "core/spec/ModelDims.h"
#include "core/spec/RunSpec.h"
#include "trainer/comm/ProcessGroups.h"
#include "trainer/models/Model.h"
#include "trainer/parallel/GradBuckets.h"
#include "trainer/parallel/GradientReducer.h"
#include "trainer/parallel/PipelineEngine.h"
#include "trainer/parallel/TensorParallel.h"
#include "trainer/parallel/TiedParameters.h"

#include <memory>
#include <vector>

namespace parallax {

// A single-device model with a layout's parallelism applied to it.
struct ParallelModel {
    std::vector<StageChunk> chunks;           // this rank's pipeline pieces, their units wrapped
    TensorParallelPlan tpPlan;                // where each tensor-parallel parameter sits in the full one
    std::unique_ptr<GradBuckets> buckets;     // every trainable parameter and its gradient, flat
    std::unique_ptr<GradientReducer> reducer; // DataParallel (ZeRO 0-2) or Zero3, over the buckets
    std::unique_ptr<TiedParameters> ties;     // the model's tied parameters that train here; null: none
    int64_t frozenInProductType = 0;          // frozen Linear values held in bf16 only (moveToDevice)
};

// Applies `spec.parallel` to a model built for one device, from the outside and from the inside out:
//  1. pipeline placement: this rank keeps its pieces' units (pipelineUnitBounds, the split the
//     estimates show); the others become placeholders;
//  2. tensor parallel over groups.tp (applyTensorParallel), then the model moves to `device`, its
//     frozen Linears in bf16 only under bf16 on a GPU (moveToDevice);
//  3. activation checkpointing of the blocks (train.activation_checkpointing);
//  4. the gradient buckets and their reducer: data parallel, ZeRO-1/2 (DataParallel) or ZeRO-3
//     (Zero3, with its unit wrappers, forward-only parameters and, under bf16 on a GPU, bf16 product
//     copies of the Linear weights), and the tied parameters' buckets of their own (TiedParameters).
// The training loop then talks to the reducer, and after its reductions to the ties.
ParallelModel parallelize(Model& model, const RunSpec& spec, const ModelDims& dims, ProcessGroups& groups,
                          torch::Device device);

} // namespace parallax

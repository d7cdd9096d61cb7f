#pragma once

#include "core/spec/Choice.h"

#include <vector>

namespace parallax {

// One thing a pipeline rank does: the forward or backward of one micro-batch through one of its
// model chunks (chunk > 0 only with the interleaved schedule). Where the schedule splits the
// backward (splitsBackward), Backward computes what the previous stage and the parameters other
// than the Linear weights need (B), and WeightGrad the Linear layers' weight gradients (W).
struct PipelineAction {
    enum class Kind { Forward, Backward, WeightGrad };
    Kind kind = Kind::Forward;
    int chunk = 0;
    int microbatch = 0;
    bool operator==(const PipelineAction& o) const {
        return kind == o.kind && chunk == o.chunk && microbatch == o.microbatch;
    }
};

// The order of work of pipeline stage `stage` of `stages` for one training step of `microbatches`
// micro-batches, each stage holding `chunks` model chunks (virtual stages; 1 unless interleaved).
//  - gpipe: every forward, then every backward (activations of all micro-batches in flight).
//  - 1f1b: stages - stage - 1 warm-up forwards, then one forward and one backward alternately, then
//    the remaining backwards (at most stages - stage micro-batches in flight).
//  - interleaved: 1F1B over chunks x micro-batches in groups of `stages` micro-batches per chunk, as
//    in Megatron-LM's interleaved schedule; needs microbatches % stages == 0. Virtual stage of chunk c
//    on stage s is c * stages + s.
//  - zb1 (ZB-H1, Qi et al., "Zero Bubble Pipeline Parallelism", 2023): 1f1b's forwards and
//    backwards in 1f1b's order, each backward followed some time later by the weight-gradient pass
//    of its micro-batch, placed where the stage would otherwise wait. The places come from one
//    simulation of all stages with passes of equal length and free messages, the same on every
//    rank: a stage whose next forward or backward cannot start runs its oldest waiting W instead,
//    and runs one before a forward that would make it hold more than `stages` micro-batches (in
//    flight or waiting for their W: 1f1b's most, on its first stage); the W passes left run at the
//    end. With equal passes it idles (p - 1) / (3m + p - 1) of the step (pipelineBubble).
//    One stage: 1f1b.
// Throws std::invalid_argument naming the parallel.* field when the combination is impossible.
std::vector<PipelineAction> pipelineSchedule(Schedule schedule, int stages, int stage, int microbatches,
                                             int chunks);

// Whether `schedule` over `stages` pipeline stages runs the Linear layers' weight gradients in
// passes of their own (WeightGrad actions): zb1 with two stages or more.
bool splitsBackward(Schedule schedule, int stages);

} // namespace parallax

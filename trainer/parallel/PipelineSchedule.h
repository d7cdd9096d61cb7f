#pragma once

#include "core/spec/Choice.h"

#include <vector>

namespace parallax {

// One thing a pipeline rank does: the forward or backward of one micro-batch through one of its
// model chunks (chunk > 0 only with the interleaved schedule).
struct PipelineAction {
    enum class Kind { Forward, Backward };
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
// Throws std::invalid_argument naming the parallel.* field when the combination is impossible.
std::vector<PipelineAction> pipelineSchedule(Schedule schedule, int stages, int stage, int microbatches,
                                             int chunks);

} // namespace parallax

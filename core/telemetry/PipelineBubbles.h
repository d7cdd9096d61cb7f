#pragma once

#include "core/spec/Choice.h"

#include "core/telemetry/Events.h"

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// Pipeline bubbles of one training step measured from its recorded spans, next to what the
// schedule's formula promises.
//
// Every rank is judged against the same window: from the earliest start to the latest end of any
// pipeline span (F, B, W, recv, send) of any rank in the step, so that a stage that starts late or
// finishes early counts that time as idle, as the schedule's formula does. A rank is busy while
// it computes: the union of its F, B and W spans (overlapping spans count once). Time blocked in
// recv or draining sends is idle, not busy; it is reported apart as `blocked`. Other span kinds
// (optimizer, collectives) are outside the pipeline phase and are ignored.
//
// A stage's fraction is the mean over its ranks (its tensor- and data-parallel replicas); the
// overall fraction is the mean over stages. Every stage holds dp * tp ranks, so this equals the
// mean over ranks whenever every rank recorded its spans.
struct PipelineBubbles {
    struct Rank {
        int rank = 0;
        int stage = 0;
        double busy = 0;      // seconds computing (union of F, B, W)
        double blocked = 0;   // seconds in recv/send and not computing
        double fraction = 0;  // 1 - busy / window
        int computeSpans = 0; // F, B and W spans recorded
    };
    struct Stage {
        int stage = 0;
        std::vector<Rank> ranks; // by rank
        double busy = 0;         // seconds, mean over ranks
        double blocked = 0;      // seconds, mean over ranks
        double fraction = 0;     // mean over ranks
        double minFraction = 0;  // over ranks: tensor/data-parallel replicas should agree
        double maxFraction = 0;
    };

    int64_t step = -1;
    double start = 0; // common window, rank 0's clock
    double end = 0;
    std::vector<Stage> stages; // by stage
    double overall = 0;        // mean of the stages' fractions

    double window() const { return end - start; }
    bool empty() const { return stages.empty(); }
    int rankCount() const;

    // From the spans of one step (RunStore::spans(run, step)), in any order. No pipeline span
    // gives an empty result. Spans of several steps throw std::invalid_argument.
    static PipelineBubbles measure(const std::vector<SpanEvent>& spans);

    // The idle fraction the schedule leaves with equal-length micro-batches and free
    // communication: (p - 1) / (m + p - 1) for gpipe and 1f1b, (p - 1) / (v m + p - 1) for
    // interleaved with v model chunks per stage, (p - 1) / (3 m + p - 1) for zb1 (equal F, B and W
    // passes). 0 for a single stage. An unknown schedule, m < 1 or v < 1 throw
    // std::invalid_argument naming the spec field.
    static double theoretical(int64_t stages, int64_t microbatches, const Choice<Schedule>& schedule,
                              int64_t virtualStages = 1);

    // Checks the order the schedule promises, per step, rank, stage and micro-batch: as many
    // forwards as backwards (one each per model chunk), every forward ending before the first
    // backward starts, no span ending before it starts; where a rank-stage records weight-gradient
    // passes (W, zb1), one per backward, each starting after a backward of its micro-batch ends.
    // `microbatches` > 0 also asks for every micro-batch 0..m-1 on every rank; `chunks` > 0 for
    // exactly that many forwards per micro-batch. Returns one sentence per problem; empty when all
    // is well.
    static std::vector<std::string> checkOrder(const std::vector<SpanEvent>& spans, int microbatches = 0,
                                               int chunks = 0);

    // F, B, W: computing; recv, send: pipeline communication.
    static bool isCompute(const std::string& kind);
    static bool isPipelineComm(const std::string& kind);
};

} // namespace parallax

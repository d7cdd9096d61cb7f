#pragma once

#include "core/spec/Choice.h"

#include <cstdint>
#include <string>

namespace parallax {

// What each pipeline schedule is, in one row per schedule: what the estimates, the validator, the
// trainer's schedule, the bubble measurement and the pages read instead of comparing names.
struct ScheduleInfo {
    Schedule schedule;
    // Runs parallel.virtual_stages model chunks per pipeline rank (interleaved 1F1B); the others run
    // one, and ignore parallel.virtual_stages above 1 with a warning or refuse it (refusesChunks).
    bool chunked;
    bool refusesChunks;
    // Runs each backward as an input-gradient pass and a deferred weight-gradient pass (ZB-H1).
    bool splitBackward;
    // Runs every micro-batch's forward before any backward (GPipe): a stage holds the activations of
    // all of a step's micro-batches at once (the memory estimate).
    bool forwardsFirst;
    // The idle share of a step's window with unit passes (T_F = T_B = T_W = 1) is
    // (p - 1) / (fill x chunks x m + p - 1): the p - 1 warm-up and drain rounds against the work a
    // stage does in a step. ZB-H1 fills two thirds of 1F1B's rounds with weight-gradient passes
    // (fill 3); interleaving divides them by the chunks.
    int fill;
    const char* formula; // the same, as the Pipeline page's tooltip writes it
};

// Throws std::invalid_argument for a value without a row.
const ScheduleInfo& scheduleInfo(Schedule schedule);
// The row of a spec's schedule; nullptr for a name that is no schedule (a spec not yet validated).
const ScheduleInfo* scheduleInfo(const Choice<Schedule>& schedule);

// The model chunks each pipeline rank runs: parallel.virtual_stages (at least 1) under a chunked
// schedule, else 1; 1 for a schedule no row knows (a spec not yet validated).
int64_t modelChunks(const Choice<Schedule>& schedule, int64_t virtualStages);

// Whether the run's pipeline is interleaved with more than one model chunk per rank.
inline bool runsModelChunks(const Choice<Schedule>& schedule, int64_t virtualStages) {
    return modelChunks(schedule, virtualStages) > 1;
}

// The theoretical bubble's formula with its numbers, as the pages write it: "(p - 1) / (v m + p - 1)
// with p = 4, m = 8, v = 2" (v only where the pipeline runs model chunks). An unknown schedule
// reads as 1F1B, as pipelineBubble counts it.
std::string bubbleFormula(const Choice<Schedule>& schedule, int64_t stages, int64_t microbatches, int64_t virtualStages);

} // namespace parallax

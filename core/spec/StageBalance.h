#pragma once

#include "core/spec/RunSpec.h"

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// What one unit of the model measured on a rank that holds it: the forward and the backward of one
// micro-batch, in milliseconds.
struct MeasuredUnit {
    int unit = 0; // index in the model
    double forward_ms = 0;
    double backward_ms = 0;
};

// Each unit's forward plus backward time (ms) for the spec's model, in model order: several entries
// of one unit (its data- and tensor-parallel replicas, or repeated probes) averaged. Throws
// std::invalid_argument naming what is wrong: a unit without a time, a unit index the model does not
// have, a negative or non-finite time.
std::vector<double> meanUnitTimes(const RunSpec& spec, const std::vector<MeasuredUnit>& times);

// Pipeline stages split by measured time (parallel.stage_split = "profile"): of every contiguous
// split of the model's units into parallel.pp stages (each stage at least one block, the other
// units riding with their block as in StagePartition.h), the one whose slowest stage, forward plus
// backward of a micro-batch, is fastest; next to the split the spec has (parallel.stage_layers, or
// by FLOPs), both timed with the same measurements.
struct StageBalance {
    std::vector<int64_t> layers;        // blocks of each stage: the value for parallel.stage_layers
    std::vector<double> stage_ms;       // each stage's measured time per micro-batch with that split
    std::vector<int64_t> before_layers; // the spec's split
    std::vector<double> before_ms;

    double slowest() const;       // max of stage_ms
    double slowestBefore() const; // max of before_ms
};

// `times`: as meanUnitTimes takes them. Throws std::invalid_argument as it does, and for a layout
// without a split to choose (parallel.pp = 1, the interleaved schedule, which splits into equal chunks).
StageBalance balanceStages(const RunSpec& spec, const std::vector<MeasuredUnit>& times);

// The probe that measures the units: the spec's own model, layout and target for `steps` steps
// (the first warms up), no checkpoints, telemetry.unit_times on, split by FLOPs (written out as
// stage_layers, so that a block count pp does not divide runs too). Throws std::invalid_argument
// naming the field when the model or the layout cannot be split.
RunSpec balanceProbeSpec(const RunSpec& spec, int64_t steps);

} // namespace parallax

#pragma once

#include "core/spec/MachineInfo.h"
#include "core/spec/RunSpec.h"
#include "core/spec/StageBalance.h"

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// What one training step of a layout costs each rank, in the parts a step-time model weighs: its
// FLOPs, the pipeline bubble that stretches them, the bytes it moves over each kind of group, and
// the ring steps of its collectives and transfers, each of which pays a latency however small it is.
struct StepCost {
    double flops = 0;     // training FLOPs of one rank per step
    double bubble = 0;    // theoretical pipeline bubble fraction
    double dp_bytes = 0;  // gradient reduction (and ZeRO-3's gathers) over the data-parallel group
    double tp_bytes = 0;  // tensor parallel's all-reduces of activations, forward and backward
    double pp_bytes = 0;  // activations and their gradients between stages
    double hops = 0;      // ring steps: an all-reduce over n ranks takes 2 (n - 1), a transfer one
    double bytes() const { return dp_bytes + tp_bytes + pp_bytes; }
};
// Throws std::invalid_argument (naming the field) when the model cannot be resolved.
StepCost stepCost(const RunSpec& spec);

// An all-reduce timed on the devices (telemetry.collective_times): `bytes` over `ranks` processes.
struct MeasuredCollective {
    int ranks = 0;
    double bytes = 0;
    double ms = 0;
};

// A step's time = compute + communication, with no overlap assumed. Compute: from each unit's
// measured time where the calibration had them (the slowest pipeline stage's units, per
// micro-batch, stretched by the bubble; tensor parallelism divides them), else FLOPs over a rate.
// Communication: the bytes a rank sends over the bandwidth, plus a latency per ring step.
//
// Ranks that share a machine's cores (more local CPU ranks than the cores run at once) cannot all
// compute at once: there a step's compute is at least the work of all its ranks over the ranks the
// cores run at once, and a pipeline's idle stages leave their cores to the busy ones.
struct StepTimeModel {
    double flops_per_s = 0;
    double bytes_per_s = 0;     // infinite: communication measured as free
    double hop_latency_s = 0;   // 0 unless all-reduces were timed
    std::vector<double> unit_ms; // forward + backward of one micro-batch of `unit_micro_batch` per unit
    int64_t unit_micro_batch = 0;
    double unit_scale = 1;       // the calibration step's compute over what its units' times add up to
    double cpu_slots = 0;        // ranks the shared cores run at once; 0: a device for each rank
    int64_t unit_ranks = 1;      // ranks that timed their units at the same time, sharing those slots

    double commMs(const StepCost& cost) const;
    double predictMs(const StepCost& cost) const; // compute from FLOPs
    double predictMs(const RunSpec& spec) const;  // compute from the units' times when there are any
};

// Calibrated by two measured steps (ms) of one layout at two global batches: the FLOPs differ and
// the communication of the gradients does not, which separates the two rates. Noise that leaves no
// time to the communication makes it free (bytes_per_s infinite) rather than negative.
StepTimeModel calibrateStepTime(const StepCost& small, double smallMs, const StepCost& large, double largeMs);

// The same, refined by what the small step's probe measured: all-reduces of a few sizes (least
// squares of time against bytes per rank give the latency and the bandwidth, which then replace
// the two-step estimate of the communication, the rest of the small step being compute) and each
// unit's time at `small`'s micro-batch (meanUnitTimes), which then weighs the compute. Throws
// std::invalid_argument as meanUnitTimes does.
struct CalibrationProbe {
    std::vector<MeasuredUnit> units;             // telemetry.unit_times of the small step's run
    std::vector<MeasuredCollective> collectives; // telemetry.collective_times of it
    double cpu_slots = 0;                        // as StepTimeModel::cpu_slots
};
StepTimeModel calibrateStepTime(const RunSpec& small, double smallMs, const RunSpec& large, double largeMs,
                                const CalibrationProbe& probe);

// Ranks of `spec` that `machine`'s cores run at once when they share them (local CPU ranks, more
// threads than cores): its cores over each rank's threads; 0 for ranks with devices of their own.
double sharedCpuSlots(const RunSpec& spec, const MachineInfo& machine);

// One layout of the advisor: the spec with that layout, or why it is not one.
struct LayoutOption {
    RunSpec spec;           // parallel.dp/tp/pp/zero set, the global batch kept
    std::string label;      // "dp2 tp1 pp2 zero1"
    std::string excluded;   // "" for a layout that can run: else the validator's first error, or memory
    double memory_bytes = 0;
    double predicted_ms = 0;
};

// Every dp x tp x pp x zero with dp * tp * pp = `devices` (zero > 0 only with dp > 1) for the spec's
// model, global batch and schedule: the micro-batch kept, or the largest smaller one that divides a
// replica's share; an explicit stage split dropped. Each is checked by the validator and, where
// `memoryLimit` > 0, its estimated memory against it. In a fixed order: dp descending, then tp,
// then zero ascending.
std::vector<LayoutOption> layoutOptions(const RunSpec& spec, int64_t devices, const MachineInfo& machine,
                                        double memoryLimit);

// The spec with its global batch multiplied by `factor` (as many more micro-batches per step), for
// calibration.
RunSpec withGlobalBatchTimes(const RunSpec& spec, int64_t factor);

} // namespace parallax

#pragma once

#include "core/telemetry/Events.h"
#include "trainer/comm/ProcessGroups.h"
#include "trainer/models/Model.h"
#include "trainer/parallel/PipelineEngine.h"

#include <torch/torch.h>

#include <vector>

namespace parallax {

// Times every unit a pipeline rank holds, its forward and its backward each alone, on the input its
// chunk received in the last step (PipelineEngine::keepInputs) with that micro-batch, and every unit
// after the first on what the one before it returned. Each unit runs `repeats` times after one warm-up, on the device
// (synchronized around each pass); its median forward and backward become a UnitTimeEvent. The
// backward starts from a gradient of ones on every floating output, through the unit's own
// wrappers (activation checkpointing recomputes, ZeRO-3 gathers), so what is timed is what a step
// pays for the unit. The passes leave gradients in the parameters: call it after the last step.
// Every rank of a stage runs the same units in the same order, so the collectives of tensor
// parallelism and ZeRO-3 inside them meet.
// CPU ranks share their machine's cores, so there the stages take turns, the others waiting without
// spinning, and no stage's times include another's work; GPU ranks time at once.
std::vector<UnitTimeEvent> timeUnits(PipelineEngine& engine, ProcessGroups& groups, const torch::Device& device,
                                     int repeats);

// Times all-reduces over the world group, of each of `bytes` (float32 buffers on the device), for
// the layout advisor's latency and bandwidth: every rank takes part, a barrier before each, one
// warm-up, then `repeats` timed; world rank 0 returns a CollectiveTimeEvent per size (its median),
// the others nothing. Call it on every rank after the last step.
std::vector<CollectiveTimeEvent> timeCollectives(ProcessGroups& groups, const torch::Device& device,
                                                 const std::vector<int64_t>& bytes, int repeats);
// The sizes the trainer times with telemetry.collective_times: from a tensor-parallel activation's
// few KiB to a gradient bucket's MiB.
const std::vector<int64_t>& collectiveProbeBytes();

} // namespace parallax

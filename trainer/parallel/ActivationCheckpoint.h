#pragma once

#include "trainer/parallel/PipelineEngine.h"

#include <vector>

namespace parallax {

// Activation checkpointing per transformer block: a block's forward runs without keeping its
// intermediate activations; when backward reaches the block, its forward runs again from the saved
// input, with autograd on, and backward goes through the recomputed graph. Memory per in-flight
// micro-batch drops to the blocks' inputs at the cost of one more forward. Blocks whose input needs
// no gradient (a frozen tower, or a block after frozen ones whose LoRA adapters train) run normally.
// The recomputation draws the random numbers the forward drew (LoRA dropout).
// `limit` > 0 (train.recompute_blocks): only the first `limit` declared units of this rank's chunks,
// in model order, that hold a parameter which trains; the others keep their activations. 0: every
// declared unit.
void checkpointBlocks(std::vector<StageChunk>& chunks, int64_t limit = 0);

} // namespace parallax

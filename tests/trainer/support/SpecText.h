#pragma once

#include <cstdint>
#include <string>

namespace parallax::testing {

// A small CPU spec for layout-equivalence tests; every layout of the same global batch and seed must
// train identically.
struct TinySpec {
    std::string kind = "gpt";
    std::string data = "synthetic";
    int64_t steps = 20;
    int64_t globalBatch = 8;
    int64_t microBatch = 2;
    int64_t dp = 1, tp = 1, pp = 1, zero = 0;
    std::string schedule = "1f1b";
    int64_t virtualStages = 1;
    int64_t layers = 0;          // 0: the preset's
    double lr = 1e-3;
    int64_t checkpointEvery = 0;
    int64_t spanEvery = 0;
    double bucketMb = 0.05;      // small buckets: several per model, so overlap is exercised
    bool recompute = false;      // train.activation_checkpointing
    int64_t recomputeBlocks = 0; // train.recompute_blocks
    std::string extraModel;      // appended to [model]
    std::string finetune;        // the [finetune] section's lines; empty: none
    std::string extraData;       // appended to [data] (path = ..., max_pixels = ...)
    std::string toToml() const;
};

// gpt of two layers (width 128) per stage over `pp` stages with 8 micro-batches per step under
// `schedule`, every step's spans reported: the run that compares the pipeline schedules' bubbles.
TinySpec bubbleComparisonSpec(const std::string& schedule, int64_t steps, int pp = 2);

} // namespace parallax::testing

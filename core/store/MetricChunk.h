#pragma once

#include "core/telemetry/Events.h"

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// Step metrics are stored in chunks: one SQLite row holds a run of consecutive steps as packed
// records, so that storing a batch costs one row instead of one per step (a row of 15 columns
// costs about 2 µs in SQLite, a packed record a few nanoseconds). Layout, little-endian: a header
// {u8 format = 1, u8 reserved, u16 fields per record}, then per step the fields in StepEvent's
// order: step (i64), t, loss, lr, grad_norm, tokens_per_s, samples_per_s, step_ms, step_ms_min,
// step_ms_max (f64), slowest_rank (i64), mfu (f64), tokens (i64), peak_mem (f64). A reader of a
// later format with more fields per record reads the fields it knows and skips the rest.
class MetricChunk {
public:
    static constexpr int kMaxSteps = 4096; // steps per stored row
    static std::string encode(const StepEvent* rows, size_t count);
    // Appends the decoded steps to `out`. Throws std::runtime_error for a damaged chunk.
    static void decode(const void* data, size_t bytes, std::vector<StepEvent>& out);
};

} // namespace parallax

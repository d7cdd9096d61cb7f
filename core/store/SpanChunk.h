#pragma once

#include "core/telemetry/Events.h"

#include <string>
#include <vector>

namespace parallax {

// Pipeline spans of one (run, step, rank) stored as one row of packed records, like MetricChunk:
// a profiled step brings a few dozen spans per rank, which would otherwise be as many rows keyed by
// seven columns. Layout, little-endian: {u8 format = 1}, then per span stage (i32), microbatch
// (i32), start (f64), end (f64), kind length (u8) and the kind's bytes. Step and rank are the row's.
class SpanChunk {
public:
    static std::string encode(const std::vector<const SpanEvent*>& spans);
    // Appends the decoded spans (with `step` and `rank`) to `out`; std::runtime_error when damaged.
    static void decode(const void* data, size_t bytes, int64_t step, int rank, std::vector<SpanEvent>& out);
};

} // namespace parallax

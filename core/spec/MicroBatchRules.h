#pragma once

#include "core/spec/RunSpec.h"

#include <cstdint>

namespace parallax {

// What a micro-batch may be for a spec whose global batch stays as it is (the optimizer's): a
// micro-batch that fits is of use only where it divides each data-parallel replica's share of the
// global batch, the rest of the share becoming accumulation.

// The largest micro-batch up to `fits` that divides a replica's share of the global batch (1 when
// the share is not whole, or `fits` is below 2).
int64_t usableMicroBatch(const RunSpec& spec, int64_t fits);

// The largest micro-batch worth probing: a replica's share of the global batch, at least 1. A
// larger one is of no use without another global batch.
int64_t largestUsefulMicroBatch(const RunSpec& spec);

} // namespace parallax

#pragma once

#include "core/spec/RunSpec.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace parallax {

// What one probe of a micro-batch size found: whether it ran, the peak memory of its most loaded
// device (GPU: the allocator's peak; CPU: the resident high-water mark), the estimate for the same
// spec, and whether it fits (it ran and its peak is within the limit).
struct FitProbe {
    int64_t micro_batch = 0;
    bool ran = false;
    double peak_bytes = 0;
    double estimate_bytes = 0;
    bool fits = false;
    // It ran out of time before it finished: it tells neither that the size fits nor that it does
    // not (a slow machine, a short --probe-timeout), and the search cannot go past it.
    bool timed_out = false;
    std::string failure; // why it did not run, or that its peak is past the limit
    double seconds = 0;
};

struct FitSearch {
    std::vector<FitProbe> probes; // in the order they ran
    int64_t largest = 0;          // the largest size known to fit; 0 when not even 1 is
    bool at_maximum = false;      // the largest is the maximum asked for: larger ones were not tried
    int64_t undecided = 0;        // the size whose probe timed out, where the search stopped; 0: none did
    bool decided() const { return undecided == 0; }
    const FitProbe* probeOf(int64_t microBatch) const;
};

// The largest micro-batch that fits, probing sizes 1, 2, 4, ... (at most `maxMicroBatch`) until one
// does not fit, then bisecting between the largest that fit and the smallest that did not, so that
// `largest` fits and `largest + 1` was probed and does not (unless it is past the maximum). A probe
// that times out ends the search undecided: `largest` is then the largest size known to fit, and
// sizes above `undecided` are unknown. Calls `probe` once per size; `onProbe` (optional) after
// each, for progress.
FitSearch searchLargestMicroBatch(const std::function<FitProbe(int64_t)>& probe, int64_t maxMicroBatch,
                                  const std::function<void(const FitProbe&)>& onProbe = {});

// The estimate corrected by measurements: peak ~ base + scale x estimate, fitted by least squares to
// the probes that ran. `base` is what the estimate does not model at all (the runtime's own memory:
// LibTorch's libraries and caches on a CPU, the CUDA context on a GPU); `scale` how far its
// proportional part is off. With one probe, or probes of one estimate, base is 0 and scale the ratio.
struct MemoryCorrection {
    double base = 0;
    double scale = 1;
    int probes = 0; // the probes it was fitted to; 0: no correction (predict returns the estimate)
    double predict(double estimateBytes) const { return base + scale * estimateBytes; }
};
MemoryCorrection correctEstimate(const std::vector<FitProbe>& probes);

// The spec a probe of `microBatch` runs: the same model and layout with that micro-batch, as many
// micro-batches per step as the spec has (a pipeline keeps as many in flight), `steps` steps,
// activation checkpointing as asked, no checkpoint but the last, no pipeline spans. Its name says
// what it probes.
RunSpec fitProbeSpec(const RunSpec& spec, int64_t microBatch, bool activationCheckpointing, int64_t steps);

} // namespace parallax

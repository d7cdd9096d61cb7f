#include "core/spec/MicroBatchFit.h"

#include "core/spec/CheckedMath.h"

#include <algorithm>
#include <stdexcept>

namespace parallax {

const FitProbe* FitSearch::probeOf(int64_t microBatch) const {
    for (const FitProbe& p : probes)
        if (p.micro_batch == microBatch) return &p;
    return nullptr;
}

FitSearch searchLargestMicroBatch(const std::function<FitProbe(int64_t)>& probe, int64_t maxMicroBatch,
                                  const std::function<void(const FitProbe&)>& onProbe) {
    if (maxMicroBatch < 1) throw std::invalid_argument("the largest micro-batch to try must be at least 1");
    FitSearch out;
    // Whether `size` fits; a probe that timed out ends the search at `size`, undecided.
    const auto run = [&](int64_t size) {
        FitProbe p = probe(size);
        p.micro_batch = size;
        p.fits = p.fits && !p.timed_out;
        out.probes.push_back(p);
        if (onProbe) onProbe(p);
        if (p.timed_out) out.undecided = size;
        return p.fits;
    };
    // Doubling: `good` fits, `bad` (when set) is the smallest size known not to.
    int64_t good = 0;
    int64_t bad = 0;
    for (int64_t size = 1;; size = std::min(size * 2, maxMicroBatch)) {
        if (run(size)) {
            good = size;
            if (size == maxMicroBatch) break;
        } else {
            bad = size;
            break;
        }
    }
    // Bisection between them: each probe halves the sizes in between until none is left.
    while (out.decided() && bad > 0 && bad - good > 1) {
        const int64_t mid = good + (bad - good) / 2;
        if (run(mid)) good = mid;
        else bad = mid;
    }
    out.largest = good;
    out.at_maximum = good == maxMicroBatch;
    return out;
}

MemoryCorrection correctEstimate(const std::vector<FitProbe>& probes) {
    double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const FitProbe& p : probes) {
        if (!p.ran || p.estimate_bytes <= 0 || p.peak_bytes <= 0) continue;
        n += 1;
        sx += p.estimate_bytes;
        sy += p.peak_bytes;
        sxx += p.estimate_bytes * p.estimate_bytes;
        sxy += p.estimate_bytes * p.peak_bytes;
    }
    MemoryCorrection c;
    c.probes = static_cast<int>(n);
    if (n == 0) return c;
    const double spread = n * sxx - sx * sx;
    if (n >= 2 && spread > 1e-9 * n * sxx) {
        c.scale = (n * sxy - sx * sy) / spread;
        c.base = (sy - c.scale * sx) / n;
        // Memory does not shrink as a micro-batch grows: a negative slope is noise of probes too
        // alike to tell apart, and the ratio says more.
        if (c.scale > 0 && c.base >= 0) return c;
    }
    c.base = 0;
    c.scale = sy / sx;
    return c;
}

RunSpec fitProbeSpec(const RunSpec& spec, int64_t microBatch, bool activationCheckpointing, int64_t steps) {
    RunSpec p = spec;
    const int64_t accumulation = std::max<int64_t>(1, spec.accumulation());
    const std::optional<int64_t> global = checkedMul(microBatch, spec.parallel.dp, accumulation);
    if (!global) throw std::invalid_argument("train.micro_batch = " + std::to_string(microBatch) + " is too large to probe");
    p.train.micro_batch = microBatch;
    p.train.global_batch = *global;
    p.train.activation_checkpointing = activationCheckpointing;
    p.train.steps = steps;
    p.train.warmup = 0;
    p.train.checkpoint_every = 0;
    p.telemetry.span_every = 0;
    p.launch.on_host_failure = OnHostFailure::Fail; // a probe that fails has answered
    p.name = spec.name + "-fit-mb" + std::to_string(microBatch) + (activationCheckpointing ? "-ac" : "");
    return p;
}

} // namespace parallax

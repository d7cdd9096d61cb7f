#include "core/spec/LayoutAdvisor.h"

#include "core/spec/Estimates.h"
#include "core/spec/LayoutLabel.h"
#include "core/spec/ModelDims.h"
#include "core/spec/SpecValidator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace parallax {

namespace {

double bytesPerElement(const ChoiceField& precision) {
    return precision.name() == choiceName(Precision::Bf16) ? 2.0 : 4.0;
}

// The largest micro-batch up to `wanted` that divides a replica's share of the global batch.
int64_t dividingMicroBatch(int64_t globalBatch, int64_t dp, int64_t wanted) {
    if (dp < 1 || globalBatch % dp != 0) return wanted;
    const int64_t share = globalBatch / dp;
    for (int64_t mb = std::min(wanted, share); mb > 1; --mb)
        if (share % mb == 0) return mb;
    return 1;
}

} // namespace

StepCost stepCost(const RunSpec& spec) {
    const Estimates e = estimate(spec);
    const ModelDims d = resolveModel(spec.model);
    const double dp = static_cast<double>(std::max<int64_t>(1, spec.parallel.dp));
    const double tp = static_cast<double>(std::max<int64_t>(1, spec.parallel.tp));
    const double pp = static_cast<double>(std::max<int64_t>(1, spec.parallel.pp));
    const double world = dp * tp * pp;
    StepCost c;
    c.flops = e.flops_per_token * static_cast<double>(e.tokens_per_step) / world;
    c.bubble = e.bubble;
    const double tokensPerSample =
        spec.train.global_batch > 0 ? static_cast<double>(e.tokens_per_step) / static_cast<double>(spec.train.global_batch) : 0;
    const double microBatches = static_cast<double>(std::max<int64_t>(1, spec.accumulation()));
    const double activation = static_cast<double>(spec.train.micro_batch) * tokensPerSample * static_cast<double>(d.dim) *
                              bytesPerElement(spec.train.precision);
    // Ring collectives: an all-reduce moves 2 (n - 1) / n of the buffer, a gather or a reduce-scatter half that.
    const double rankParams = static_cast<double>(e.trainable_params) / (tp * pp);
    const double ring = (dp - 1.0) / dp;
    const double grads = rankParams * bytesPerElement(spec.parallel.reduce_dtype);
    c.dp_bytes = spec.parallel.zero >= 3 ? ring * grads + 2.0 * ring * rankParams * 4.0 : 2.0 * ring * grads;
    // Two all-reduces per block forward (attention, MLP) and two backward, each micro-batch.
    const double blocksPerStage = static_cast<double>(pipelineBlocks(d)) / pp;
    c.tp_bytes = 4.0 * 2.0 * (tp - 1.0) / tp * activation * blocksPerStage * microBatches;
    c.pp_bytes = pp > 1 ? 2.0 * activation * microBatches : 0.0;
    return c;
}

double StepTimeModel::predictMs(const StepCost& cost) const {
    const double compute = flops_per_s > 0 ? cost.flops / (flops_per_s * std::max(1e-6, 1.0 - cost.bubble)) : 0;
    const double comm = std::isfinite(bytes_per_s) && bytes_per_s > 0 ? cost.bytes() / bytes_per_s : 0;
    return 1000.0 * (compute + comm);
}

StepTimeModel calibrateStepTime(const StepCost& small, double smallMs, const StepCost& large, double largeMs) {
    StepTimeModel m;
    const double ratio = small.flops > 0 ? large.flops / small.flops : 0;
    // t = c + k at the small batch, ratio * c + k at the large one.
    double compute = ratio > 1 ? (largeMs - smallMs) / (ratio - 1.0) : smallMs;
    if (compute <= 0 || compute > smallMs) compute = smallMs; // noise: all of it is compute
    const double comm = smallMs - compute;
    m.flops_per_s = small.flops / (compute / 1000.0) * (1.0 - small.bubble);
    m.bytes_per_s = comm > 1e-9 && small.bytes() > 0 ? small.bytes() / (comm / 1000.0)
                                                      : std::numeric_limits<double>::infinity();
    return m;
}

RunSpec withGlobalBatchTimes(const RunSpec& spec, int64_t factor) {
    RunSpec s = spec;
    s.train.global_batch = spec.train.global_batch * factor;
    return s;
}

std::vector<LayoutOption> layoutOptions(const RunSpec& spec, int64_t devices, const MachineInfo& machine,
                                        double memoryLimit) {
    if (devices < 1) throw std::invalid_argument("--devices must be at least 1");
    std::vector<LayoutOption> out;
    for (int64_t dp = devices; dp >= 1; --dp) {
        if (devices % dp != 0) continue;
        for (int64_t tp = 1; tp <= devices / dp; ++tp) {
            if ((devices / dp) % tp != 0) continue;
            const int64_t pp = devices / dp / tp;
            for (int64_t zero = 0; zero <= (dp > 1 ? 3 : 0); ++zero) {
                LayoutOption o;
                o.spec = spec;
                ParallelSpec& p = o.spec.parallel;
                p.dp = dp;
                p.tp = tp;
                p.pp = pp;
                p.zero = zero;
                p.stage_layers.clear();
                if (pp == 1) p.virtual_stages = 1;
                o.spec.launch.processes.reset();
                o.spec.train.micro_batch = dividingMicroBatch(spec.train.global_batch, dp, spec.train.micro_batch);
                o.label = layoutLabel(p);
                for (const SpecIssue& issue : validateSpec(o.spec, machine)) {
                    if (!issue.warning) {
                        o.excluded = issue.message;
                        break;
                    }
                }
                if (o.excluded.empty()) {
                    try {
                        o.memory_bytes = estimate(o.spec).memory.total();
                        if (memoryLimit > 0 && o.memory_bytes > memoryLimit)
                            o.excluded = "needs " + formatBytes(o.memory_bytes) + " per device, more than the " +
                                         formatBytes(memoryLimit) + " there are";
                    } catch (const std::invalid_argument& e) {
                        o.excluded = e.what();
                    }
                }
                out.push_back(std::move(o));
            }
        }
    }
    return out;
}

} // namespace parallax

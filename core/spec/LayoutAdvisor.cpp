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
    // Ring steps: the gradients' all-reduces bucket by bucket (ZeRO-3 gathers every block forward
    // and backward), tensor parallel's four all-reduces per block and micro-batch, and a stage's
    // activation and gradient transfers per micro-batch.
    if (dp > 1) {
        const double bucketBytes = std::max(1.0, spec.parallel.bucket_mb * 1048576.0);
        c.hops += std::max(1.0, std::ceil(grads / bucketBytes)) * 2.0 * (dp - 1.0);
        if (spec.parallel.zero >= 3) c.hops += 2.0 * blocksPerStage * microBatches * (dp - 1.0);
    }
    c.hops += 4.0 * blocksPerStage * microBatches * 2.0 * (tp - 1.0);
    if (pp > 1) c.hops += 2.0 * microBatches;
    return c;
}

namespace {

// Compute of one step from the model's units' times, before the calibration's scale: the slowest
// pipeline stage's units per micro-batch, as many micro-batches as the step has, stretched by the
// schedule's bubble; tensor parallelism divides each unit. On shared cores, at least the work of
// every rank over the ranks they run at once. Negative when the times are not of this model's units.
double unitComputeMs(const StepTimeModel& m, const RunSpec& spec, double bubble) {
    const ModelDims dims = resolveModel(spec.model);
    const std::vector<int> bounds = pipelineUnitBounds(spec, dims);
    if (bounds.empty() || static_cast<size_t>(bounds.back()) != m.unit_ms.size() || m.unit_micro_batch < 1) return -1;
    // The times of ranks that timed their units side by side on fewer slots, as one rank alone.
    const double alone = m.cpu_slots > 0 && static_cast<double>(m.unit_ranks) > m.cpu_slots
                             ? m.cpu_slots / static_cast<double>(m.unit_ranks)
                             : 1.0;
    const size_t pp = static_cast<size_t>(std::max<int64_t>(1, spec.parallel.pp));
    std::vector<double> stage(pp, 0.0);
    double all = 0;
    for (size_t c = 0; c + 1 < bounds.size(); ++c)
        for (int u = bounds[c]; u < bounds[c + 1]; ++u) {
            stage[c % pp] += m.unit_ms[static_cast<size_t>(u)];
            all += m.unit_ms[static_cast<size_t>(u)];
        }
    const double scale = alone * static_cast<double>(spec.train.micro_batch) / static_cast<double>(m.unit_micro_batch);
    const double tp = static_cast<double>(std::max<int64_t>(1, spec.parallel.tp));
    const double microBatches = static_cast<double>(std::max<int64_t>(1, spec.accumulation()));
    const double critical =
        *std::max_element(stage.begin(), stage.end()) * scale / tp * microBatches / std::max(1e-6, 1.0 - bubble);
    const double ranks = static_cast<double>(spec.worldSize());
    if (m.cpu_slots <= 0 || ranks <= m.cpu_slots) return critical;
    // Every replica's micro-batches through every unit (a unit's tensor-parallel parts together).
    const double work = all * scale * microBatches * static_cast<double>(std::max<int64_t>(1, spec.parallel.dp));
    return std::max(critical, work / m.cpu_slots);
}

} // namespace

double StepTimeModel::commMs(const StepCost& cost) const {
    const double bandwidth = std::isfinite(bytes_per_s) && bytes_per_s > 0 ? cost.bytes() / bytes_per_s : 0;
    return 1000.0 * (bandwidth + cost.hops * hop_latency_s);
}

double StepTimeModel::predictMs(const StepCost& cost) const {
    const double compute = flops_per_s > 0 ? cost.flops / (flops_per_s * std::max(1e-6, 1.0 - cost.bubble)) : 0;
    return 1000.0 * compute + commMs(cost);
}

double StepTimeModel::predictMs(const RunSpec& spec) const {
    const StepCost cost = stepCost(spec);
    if (unit_ms.empty()) return predictMs(cost);
    double units = -1;
    try {
        units = unitComputeMs(*this, spec, cost.bubble);
    } catch (const std::invalid_argument&) {
        // No split of this layout to weigh the units by: its FLOPs say the compute.
    }
    if (units < 0) return predictMs(cost);
    return unit_scale * units + commMs(cost);
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

StepTimeModel calibrateStepTime(const RunSpec& small, double smallMs, const RunSpec& large, double largeMs,
                                const CalibrationProbe& probe) {
    const StepCost smallCost = stepCost(small);
    StepTimeModel m = calibrateStepTime(smallCost, smallMs, stepCost(large), largeMs);
    // The small step's compute as the two steps separate it.
    double computeMs = m.flops_per_s > 0 ? 1000.0 * smallCost.flops /
                                               (m.flops_per_s * std::max(1e-6, 1.0 - smallCost.bubble))
                                         : smallMs;

    // Time = latency + bytes per rank / bandwidth, fitted over the sizes timed; an all-reduce over
    // n ranks takes 2 (n - 1) ring steps and sends 2 (n - 1) / n of its buffer from each rank.
    std::vector<std::pair<double, double>> points; // bytes per rank, seconds
    double steps = 0;
    for (const MeasuredCollective& c : probe.collectives) {
        if (c.ranks < 2 || !(c.ms >= 0) || !(c.bytes > 0)) continue;
        const double n = c.ranks;
        points.emplace_back(2.0 * (n - 1.0) / n * c.bytes, c.ms / 1000.0);
        steps = 2.0 * (n - 1.0);
    }
    if (points.size() >= 2) {
        // Relative errors weighed alike (weights 1 / t^2): the sizes span three orders of magnitude,
        // and the largest alone would otherwise decide the line (and its latency).
        double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
        for (const auto& [x, y] : points) {
            const double w = y > 0 ? 1.0 / (y * y) : 0.0;
            sw += w;
            sx += w * x;
            sy += w * y;
            sxx += w * x * x;
            sxy += w * x * y;
        }
        const double denominator = sw * sxx - sx * sx;
        double slope = denominator > 0 ? (sw * sxy - sx * sy) / denominator : 0;
        double intercept = sw > 0 ? (sy - slope * sx) / sw : 0;
        if (intercept < 0) { // through the origin: no latency measurable
            intercept = 0;
            slope = sxx > 0 ? sxy / sxx : 0;
        }
        StepTimeModel timed = m;
        timed.bytes_per_s = slope > 0 ? 1.0 / slope : std::numeric_limits<double>::infinity();
        timed.hop_latency_s = intercept / steps;
        // The step's own communication by the timed all-reduces, the rest of it compute: the
        // calibration's layout comes out as measured. Collectives slower than the whole step did not
        // time what the step does, and the two steps' estimate stays.
        const double commMs = timed.commMs(smallCost);
        if (commMs < smallMs) {
            m = timed;
            computeMs = smallMs - commMs;
            m.flops_per_s = smallCost.flops / (computeMs / 1000.0) * (1.0 - smallCost.bubble);
        }
    }

    if (!probe.units.empty()) {
        m.unit_ms = meanUnitTimes(small, probe.units);
        m.unit_micro_batch = small.train.micro_batch;
        m.cpu_slots = probe.cpu_slots;
        // The trainer times the units of every rank of a stage at once (trainer/train/UnitTimer).
        m.unit_ranks = small.worldSize() / std::max<int64_t>(1, small.parallel.pp);
        const double raw = unitComputeMs(m, small, smallCost.bubble);
        m.unit_scale = raw > 0 ? computeMs / raw : 1.0;
    }
    return m;
}

double sharedCpuSlots(const RunSpec& spec, const MachineInfo& machine) {
    if (spec.launch.device != Device::Cpu || spec.launch.target != Target::Local || machine.cores < 1) return 0;
    const int64_t ranks = std::max<int64_t>(1, spec.processCount());
    // threads_per_rank = 0 divides the cores among the ranks, at least one thread each.
    const int64_t threads = spec.launch.threads_per_rank > 0 ? spec.launch.threads_per_rank
                                                             : std::max<int64_t>(1, machine.cores / ranks);
    return static_cast<double>(machine.cores) / static_cast<double>(threads);
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

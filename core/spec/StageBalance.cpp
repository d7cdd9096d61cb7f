#include "core/spec/StageBalance.h"

#include "core/spec/Estimates.h"
#include "core/spec/ModelDims.h"
#include "core/spec/ModelKinds.h"
#include "core/spec/ScheduleInfo.h"
#include "core/spec/StagePartition.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace parallax {

namespace {

std::vector<double> stageTimes(const std::vector<int>& bounds, const std::vector<double>& unitMs) {
    std::vector<double> out;
    for (size_t s = 0; s + 1 < bounds.size(); ++s) {
        double ms = 0;
        for (int u = bounds[s]; u < bounds[s + 1]; ++u) ms += unitMs[static_cast<size_t>(u)];
        out.push_back(ms);
    }
    return out;
}

double largest(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); }

} // namespace

double StageBalance::slowest() const { return largest(stage_ms); }
double StageBalance::slowestBefore() const { return largest(before_ms); }

std::vector<double> meanUnitTimes(const RunSpec& spec, const std::vector<MeasuredUnit>& times) {
    const ModelDims dims = resolveModel(spec.model);
    const size_t n = modelKindInfo(dims.kind).units(dims).size();
    std::vector<double> sum(n, 0.0);
    std::vector<int> count(n, 0);
    for (const MeasuredUnit& t : times) {
        if (t.unit < 0 || static_cast<size_t>(t.unit) >= n)
            throw std::invalid_argument("a measured time names unit " + std::to_string(t.unit) + ", but the model has " +
                                        std::to_string(n) + " units (0 to " + std::to_string(n - 1) +
                                        "): the probe ran another model than the spec's");
        const double ms = t.forward_ms + t.backward_ms;
        if (!std::isfinite(ms) || t.forward_ms < 0 || t.backward_ms < 0)
            throw std::invalid_argument("unit " + std::to_string(t.unit) + " has no usable time (forward " +
                                        std::to_string(t.forward_ms) + " ms, backward " + std::to_string(t.backward_ms) +
                                        " ms)");
        sum[static_cast<size_t>(t.unit)] += ms;
        ++count[static_cast<size_t>(t.unit)];
    }
    std::vector<double> out(n, 0.0);
    for (size_t u = 0; u < n; ++u) {
        if (count[u] == 0)
            throw std::invalid_argument("unit " + std::to_string(u) + " of " + std::to_string(n) +
                                        " has no measured time: every pipeline stage must report its units");
        out[u] = sum[u] / count[u];
    }
    return out;
}

StageBalance balanceStages(const RunSpec& spec, const std::vector<MeasuredUnit>& times) {
    if (spec.parallel.pp < 2)
        throw std::invalid_argument("parallel.stage_split = \"profile\" balances pipeline stages, and parallel.pp = " +
                                    std::to_string(spec.parallel.pp) + " has one; set parallel.pp to 2 or more");
    if (runsModelChunks(spec.parallel.schedule, spec.parallel.virtual_stages))
        throw std::invalid_argument("parallel.stage_split = \"profile\" cannot be used with parallel.schedule = "
                                    "\"interleaved\", which splits the blocks into equal chunks; use \"1f1b\"");
    const ModelDims dims = resolveModel(spec.model);
    const std::vector<int> before = pipelineUnitBounds(spec, dims); // validates the dims and the layout
    const std::vector<UnitEstimate> units = modelKindInfo(dims.kind).units(dims);
    const std::vector<double> unitMs = meanUnitTimes(spec, times);
    std::vector<UnitInfo> info;
    for (size_t u = 0; u < units.size(); ++u) info.push_back({units[u].block, unitMs[u]});
    const std::vector<int> after = partitionUnits(info, static_cast<int>(spec.parallel.pp));

    StageBalance b;
    b.before_layers = pipelinePieces(spec, dims);
    b.before_ms = stageTimes(before, unitMs);
    b.stage_ms = stageTimes(after, unitMs);
    for (size_t s = 0; s + 1 < after.size(); ++s) {
        int64_t blocks = 0;
        for (int u = after[s]; u < after[s + 1]; ++u) blocks += units[static_cast<size_t>(u)].block ? 1 : 0;
        b.layers.push_back(blocks);
    }
    return b;
}

RunSpec balanceProbeSpec(const RunSpec& spec, int64_t steps) {
    RunSpec p = spec;
    p.name = spec.name + "-balance";
    p.train.steps = steps;
    p.train.warmup = 0;
    p.train.checkpoint_every = 0;
    p.telemetry.span_every = 0;
    p.telemetry.unit_times = true;
    // Split by FLOPs, given as stage_layers: the probe runs whatever the block count.
    p.parallel.stage_split = StageSplit::Flops;
    p.parallel.stage_layers.clear();
    if (p.parallel.pp > 1 && !runsModelChunks(p.parallel.schedule, p.parallel.virtual_stages))
        p.parallel.stage_layers = pipelinePieces(p, resolveModel(p.model));
    p.launch.on_host_failure = OnHostFailure::Fail; // a probe that fails has answered
    return p;
}

} // namespace parallax

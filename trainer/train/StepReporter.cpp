#include "trainer/train/StepReporter.h"

#include "core/telemetry/Statistics.h"
#include "trainer/train/DeviceSampler.h"
#if PARALLAX_WITH_CUDA
#include "trainer/train/CudaSupport.h"
#endif

#include <algorithm>
#include <sstream>

namespace parallax {

StepReporter::StepReporter(TelemetryEmitter& out, ProcessGroups& groups, torch::Device device, Options options)
    : m_out(out), m_groups(groups), m_device(device), m_o(options),
      m_tokensSeen(options.startStep * options.globalBatch * options.tokensPerSample) {}

double StepReporter::peakMemoryBytes() const {
#if PARALLAX_WITH_CUDA
    if (m_device.is_cuda()) {
        const double peak = static_cast<double>(peakAllocatedBytes(m_device));
        resetPeakAllocated(m_device);
        return peak;
    }
#endif
    // The step's peak: the high-water mark, set back to the resident size for the next step.
    const double peak = DeviceSampler::peakResidentBytes();
    DeviceSampler::resetPeakResident();
    return peak;
}

void StepReporter::report(const FinishedStep& s) {
    const int64_t warmup = std::min<int64_t>(10, (m_o.steps - m_o.startStep) / 2);
    if (s.step >= m_o.startStep + warmup) {
        m_steadySteps.push_back({s.step, s.ms, s.lapMs});
        if (m_steadySteps.size() > kSteadyStepsKept) m_steadySteps.pop_front();
    }
    const int64_t tokensPerStep = s.positions > 0 ? s.positions : m_o.globalBatch * m_o.tokensPerSample;
    m_tokensSeen += tokensPerStep;
    if (m_o.rankSteps && s.step % m_o.stepEvery == 0) {
        RankStepEvent e;
        e.rank = m_groups.worldRank();
        e.step = s.step;
        e.wait_ms = s.waitMs;
        e.compute_ms = std::max(0.0, s.hostMs - s.waitMs);
        e.t = TelemetryEmitter::now();
        m_out.emit(e);
    }
    for (SpanEvent span : s.spans) {
        span.start -= m_o.clockOffset;
        span.end -= m_o.clockOffset;
        m_out.emit(span);
    }

    const double msMin = m_groups.world->allReduceScalar(s.ms, ReduceOp::Min);
    const double peakMemory = m_groups.world->allReduceScalar(peakMemoryBytes(), ReduceOp::Max);
    const auto [msMax, slowest] = m_groups.world->maxLoc(s.ms);
    if (m_groups.worldRank() != 0 || (s.step % m_o.stepEvery != 0 && s.step + 1 != m_o.steps)) return;
    StepEvent e;
    e.step = s.step;
    e.loss = s.loss;
    e.lr = s.lr;
    e.grad_norm = s.gradNorm;
    e.step_ms = s.ms;
    e.step_ms_min = msMin;
    e.step_ms_max = msMax;
    e.slowest_rank = slowest;
    const double seconds = msMax / 1e3;
    e.tokens_per_s = seconds > 0 ? tokensPerStep / seconds : 0;
    e.samples_per_s = seconds > 0 ? m_o.globalBatch / seconds : 0;
    const double flopsPerS = s.flops > 0 ? (seconds > 0 ? s.flops / seconds : 0) : m_o.flopsPerToken * e.tokens_per_s;
    e.mfu = m_o.peakFlops > 0 ? flopsPerS / (m_o.peakFlops * m_groups.world->size()) : 0;
    e.tokens = m_tokensSeen;
    e.peak_mem = peakMemory;
    e.t = TelemetryEmitter::now();
    m_out.emit(e);
}

void StepReporter::logBreakdown() const {
    static const char* const kParts[] = {"forward and backward", "waiting for gradient reductions after backward",
                                         "gradient norm and its sum over the stages and shards", "optimizer",
                                         "loss reduction"};
    constexpr size_t kCount = sizeof(kParts) / sizeof(kParts[0]);
    if (m_steadySteps.empty()) return;
    std::vector<double> total;
    std::vector<std::vector<double>> parts(kCount);
    for (const SteadyStep& s : m_steadySteps) {
        if (s.lapMs.size() != kCount) return;
        total.push_back(s.ms);
        for (size_t i = 0; i < kCount; ++i) parts[i].push_back(s.lapMs[i]);
    }
    std::ostringstream line;
    line.setf(std::ios::fixed);
    line.precision(2);
    line << "rank " << m_groups.worldRank() << ", steps " << m_steadySteps.front().step << " to "
         << m_steadySteps.back().step << ", medians of each part of the step ("
         << (m_device.is_cuda() ? "CUDA events on the compute stream" : "host clock") << "): step "
         << medianOf(total).value_or(0) << " ms;";
    for (size_t i = 0; i < kCount; ++i) line << (i ? ", " : " ") << kParts[i] << " " << medianOf(parts[i]).value_or(0);
    line << " ms";
    m_out.info(line.str());
}

} // namespace parallax

#include "core/store/RunReport.h"

#include "core/spec/ScheduleInfo.h"
#include "core/spec/SpecIO.h"
#include "core/telemetry/PipelineBubbles.h"

#include <algorithm>
#include <map>
#include <utility>

namespace parallax {

namespace {

// Running mean, minimum and maximum of the values that are known (>= 0), each weighted by the
// samples its row stands for (a thinned row stands for a window of them: TelemetryThinning.h).
struct Stat {
    double sum = 0, lo = 0, hi = 0;
    int n = 0;
    void add(double v, int weight = 1) {
        if (!(v >= 0)) return;
        lo = n ? std::min(lo, v) : v;
        hi = n ? std::max(hi, v) : v;
        sum += v * weight;
        n += weight;
    }
    std::optional<double> mean() const { return n ? std::optional<double>(sum / n) : std::nullopt; }
    std::optional<double> min() const { return n ? std::optional<double>(lo) : std::nullopt; }
    std::optional<double> max() const { return n ? std::optional<double>(hi) : std::nullopt; }
};

struct DeviceStats {
    std::string host;
    int samples = 0;
    Stat util, mem, memTotal, power, temp, clock, cpu, rss;
};

} // namespace

RunReport buildRunReport(const RunStore& store, int64_t run, int64_t fromStep) {
    const std::optional<RunRecord> record = store.run(run);
    if (!record) throw StoreError("no run " + std::to_string(run) + " in " + store.path());
    return buildRunReport(store, *record, store.metrics(run, fromStep - 1), fromStep);
}

namespace {

// Each device's samples within the counted steps' time span.
void addDevices(const RunStore& store, int64_t run, RunReport& report) {
    std::map<std::pair<int, int>, DeviceStats> byRank;
    for (const DeviceEvent& d : store.deviceSamples(run, report.windowStart)) {
        if (d.t > report.windowEnd) continue;
        DeviceStats& s = byRank[{d.rank, d.device}];
        s.host = d.host;
        const int weight = std::max(1, d.samples);
        s.samples += weight;
        s.util.add(d.util, weight);
        s.mem.add(d.mem_used);
        s.memTotal.add(d.mem_total);
        s.power.add(d.power_w, weight);
        s.temp.add(d.temp_c);
        s.clock.add(d.sm_clock_mhz, weight);
        s.cpu.add(d.cpu_pct, weight);
        s.rss.add(d.rss);
    }
    for (const auto& [key, s] : byRank) {
        RunReport::Device d;
        d.rank = key.first;
        d.device = key.second;
        d.host = s.host;
        d.samples = s.samples;
        d.utilMean = s.util.mean();
        d.utilMin = s.util.min();
        d.utilMax = s.util.max();
        d.memMax = s.mem.max();
        d.memTotal = s.memTotal.max();
        d.powerMean = s.power.mean();
        d.tempMax = s.temp.max();
        d.smClockMean = s.clock.mean();
        d.cpuMean = s.cpu.mean();
        d.rssMax = s.rss.max();
        report.devices.push_back(std::move(d));
    }
}

// Each step's measured bubbles, and their medians overall and per stage.
void addBubbles(const RunStore& store, int64_t run, RunReport& report) {
    std::vector<double> overall;
    std::vector<std::vector<double>> perStage;
    for (const int64_t step : store.spanSteps(run)) {
        if (step < report.fromStep) continue;
        const PipelineBubbles b = PipelineBubbles::measure(store.spans(run, step));
        if (b.empty()) continue;
        RunReport::BubbleStep row;
        row.step = step;
        row.overall = b.overall;
        overall.push_back(b.overall);
        for (const PipelineBubbles::Stage& s : b.stages) {
            row.stages.push_back(s.fraction);
            if (perStage.size() <= static_cast<size_t>(s.stage)) perStage.resize(static_cast<size_t>(s.stage) + 1);
            perStage[static_cast<size_t>(s.stage)].push_back(s.fraction);
        }
        report.bubbles.push_back(std::move(row));
    }
    report.bubbleMedian = medianOf(overall);
    for (const auto& stage : perStage) report.stageMedians.push_back(medianOf(stage).value_or(0.0));

}

// The theoretical bubble of the run's schedule, or why there is none.
void addBubbleTheory(const RunRecord& record, RunReport& report) {
    const int64_t run = record.id;
    if (record.spec_toml.empty()) {
        report.theoryBasis = "the run has no spec stored";
    } else {
        try {
            const RunSpec spec = parseSpec(record.spec_toml, "run " + std::to_string(run) + " spec");
            if (spec.parallel.pp > 1) {
                report.bubbleTheory = PipelineBubbles::theoretical(spec.parallel.pp, spec.accumulation(),
                                                                   spec.parallel.schedule, spec.parallel.virtual_stages);
                report.theoryBasis = "p = " + std::to_string(spec.parallel.pp) + ", m = " +
                                     std::to_string(spec.accumulation()) + ", " + spec.parallel.schedule.name();
                if (const ScheduleInfo* info = scheduleInfo(spec.parallel.schedule); info && info->chunked)
                    report.theoryBasis += ", v = " + std::to_string(spec.parallel.virtual_stages);
            } else {
                report.theoryBasis = "one pipeline stage";
            }
        } catch (const std::exception& e) {
            report.theoryBasis = e.what();
        }
    }
}

} // namespace

RunReport buildRunReport(const RunStore& store, const RunRecord& record, const std::vector<StepEvent>& metrics,
                         int64_t fromStep) {
    const int64_t run = record.id;
    RunReport report;
    report.run = run;
    report.name = record.name;
    report.fromStep = fromStep;

    // Throughput over the counted steps; their time span bounds the device samples that count.
    std::vector<double> tokens, ms, mfu;
    for (const StepEvent& s : metrics) {
        if (s.step < fromStep) continue;
        if (report.steps == 0) report.windowStart = s.t - s.step_ms / 1e3;
        report.windowEnd = s.t;
        report.lastStep = s.step;
        ++report.steps;
        tokens.push_back(s.tokens_per_s);
        ms.push_back(s.step_ms);
        if (s.mfu > 0) mfu.push_back(s.mfu);
        if (s.peak_mem > 0) report.peakMem = std::max(report.peakMem.value_or(0.0), s.peak_mem);
    }
    report.tokensPerS = medianOf(tokens);
    report.stepMs = medianOf(ms);
    report.mfu = medianOf(mfu);

    if (report.steps > 0) addDevices(store, run, report);
    addBubbles(store, run, report);
    addBubbleTheory(record, report);
    return report;
}

} // namespace parallax

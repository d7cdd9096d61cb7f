#include "app/cli/Commands.h"
#include "app/cli/Format.h"
#include "app/cli/TextTable.h"
#include "core/launch/HangDetector.h"
#include "core/spec/Estimates.h"
#include "core/store/RunReport.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <iostream>
#include <optional>

namespace parallax {

namespace {

std::string fixed(const std::optional<double>& v, const char* format) {
    if (!v) return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, format, *v);
    return buf;
}

std::string bytes(const std::optional<double>& v) {
    return v ? formatBytes(*v) : "-";
}

std::string percent(const std::optional<double>& fraction) {
    return fraction ? formatPercent(*fraction) : "-";
}

double medianOf(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Each rank's compute and wait per step over the steps reported, and the straggler among them
// by the supervisor's own rule (HangDetector), over all of those steps.
void printRanks(const RunStore& store, const RunRecord& r, int64_t fromStep) {
    const std::vector<RankStepEvent> rows = store.events<RankStepEvent>(r.id, fromStep - 1);
    std::printf("\nranks over those steps (compute and time waiting in collectives, medians per step)\n");
    if (rows.empty()) {
        std::printf("  no per-rank step times (telemetry.flight_recorder) at or after step %lld\n",
                    static_cast<long long>(fromStep));
        return;
    }
    const std::optional<RunStartEvent> start = store.runStart(r.id);
    std::map<int, std::vector<double>> compute, wait;
    for (const RankStepEvent& e : rows) {
        compute[e.rank].push_back(e.compute_ms);
        wait[e.rank].push_back(e.wait_ms);
    }
    size_t fewest = rows.size();
    for (const auto& [rank, v] : compute) fewest = std::min(fewest, v.size());
    auto hostOf = [&](int rank) {
        return start && rank >= 0 && size_t(rank) < start->hosts.size() ? start->hosts[size_t(rank)] : std::string();
    };
    // The supervisor's rule over all of these steps, and the same with any ratio: the slowest.
    auto find = [&](std::optional<double> ratio) {
        HangDetector::Options o;
        o.straggler_skip = 0;
        o.straggler_window = std::max<size_t>(1, fewest);
        if (ratio) o.straggler_ratio = *ratio;
        HangDetector d(o);
        d.setHostOf(hostOf);
        if (start) d.setLayout(start->dp, start->tp, start->pp);
        for (const RankStepEvent& e : rows) d.onRankStep(e);
        return d.straggler();
    };

    using A = TextTable::Align;
    TextTable t;
    t.addColumn("RANK", A::Right);
    t.addColumn("HOST");
    for (const char* h : {"STEPS", "COMPUTE MS", "WAIT MS", "WAITING"}) t.addColumn(h, A::Right);
    for (const auto& [rank, c] : compute) {
        const double cm = medianOf(c), wm = medianOf(wait[rank]);
        t.addRow({std::to_string(rank), hostOf(rank), std::to_string(c.size()), fixed(cm, "%.1f"), fixed(wm, "%.1f"),
                  cm + wm > 0 ? formatPercent(wm / (cm + wm)) : "-"});
    }
    t.print(std::cout);
    const double ratio = HangDetector::Options{}.straggler_ratio;
    if (const std::optional<HangDetector::Finding> f = find(std::nullopt))
        std::printf("straggler: %s\n", f->message.c_str());
    else if (const std::optional<HangDetector::Finding> slowest = find(1.1))
        std::printf("slowest: %s (a straggler computes %.1fx its peers' median)\n", slowest->message.c_str(), ratio);
    else
        std::printf("no straggler: no rank (or pipeline stage) computes %.1fx the median of its peers\n", ratio);
}

} // namespace

int reportCommand(const std::string& storePath, const std::string& run, int64_t fromStep) {
    RunStore store(storePath);
    const RunRecord r = requireRun(store, run);
    const RunReport report = buildRunReport(store, r, store.metrics(r.id, fromStep - 1), fromStep);
    std::printf("run %lld  %s  (%s, %s)\n", static_cast<long long>(r.id), r.name.c_str(), r.layout.c_str(),
                runStateName(r.state).c_str());
    if (report.steps == 0) {
        std::printf("no step at or after step %lld yet\n", static_cast<long long>(fromStep));
        return 0;
    }
    std::printf("steps %lld to %lld (%lld step rows; medians)\n", static_cast<long long>(fromStep),
                static_cast<long long>(report.lastStep), static_cast<long long>(report.steps));
    std::printf("  tokens/s %s   step %s ms   MFU %s   peak memory %s\n",
                report.tokensPerS ? formatRate(*report.tokensPerS).c_str() : "-", fixed(report.stepMs, "%.1f").c_str(),
                percent(report.mfu).c_str(), bytes(report.peakMem).c_str());

    std::printf("\ndevices while those steps ran\n");
    if (report.devices.empty()) {
        std::printf("  no device samples in that time\n");
    } else {
        using A = TextTable::Align;
        TextTable t;
        t.addColumn("RANK", A::Right);
        t.addColumn("HOST");
        t.addColumn("GPU", A::Right);
        for (const char* h : {"SAMPLES", "UTIL MEAN", "UTIL MIN", "MEM MAX", "MEM TOTAL", "POWER W", "TEMP MAX",
                              "SM MHZ", "CPU %", "RSS MAX"})
            t.addColumn(h, A::Right);
        for (const RunReport::Device& d : report.devices)
            t.addRow({std::to_string(d.rank), d.host, d.device >= 0 ? std::to_string(d.device) : "cpu",
                      std::to_string(d.samples), fixed(d.utilMean, "%.1f%%"), fixed(d.utilMin, "%.0f%%"),
                      bytes(d.memMax), bytes(d.memTotal), fixed(d.powerMean, "%.0f"), fixed(d.tempMax, "%.0f"),
                      fixed(d.smClockMean, "%.0f"), fixed(d.cpuMean, "%.0f"), bytes(d.rssMax)});
        t.print(std::cout);
    }

    printRanks(store, r, fromStep);

    std::printf("\npipeline bubble");
    if (report.bubbleTheory)
        std::printf(" (theory %s: %s)", formatPercent(*report.bubbleTheory).c_str(), report.theoryBasis.c_str());
    else
        std::printf(" (no theory: %s)", report.theoryBasis.c_str());
    std::printf("\n");
    if (report.bubbles.empty()) {
        std::printf("  no step with pipeline spans (telemetry.span_every) at or after step %lld\n",
                    static_cast<long long>(fromStep));
        return 0;
    }
    using A = TextTable::Align;
    TextTable t;
    t.addColumn("STEP", A::Right);
    t.addColumn("MEASURED", A::Right);
    for (size_t s = 0; s < report.stageMedians.size(); ++s) t.addColumn("STAGE " + std::to_string(s), A::Right);
    for (const RunReport::BubbleStep& b : report.bubbles) {
        std::vector<std::string> row = {std::to_string(b.step), formatPercent(b.overall)};
        for (size_t s = 0; s < report.stageMedians.size(); ++s)
            row.push_back(s < b.stages.size() ? formatPercent(b.stages[s]) : "-");
        t.addRow(std::move(row));
    }
    std::vector<std::string> medians = {"median", percent(report.bubbleMedian)};
    for (double m : report.stageMedians) medians.push_back(formatPercent(m));
    t.addRow(std::move(medians));
    t.print(std::cout);
    return 0;
}

} // namespace parallax

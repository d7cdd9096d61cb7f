#include "app/cli/Commands.h"
#include "app/cli/Format.h"
#include "app/cli/TextTable.h"
#include "core/spec/Estimates.h"
#include "core/store/RunReport.h"

#include <cstdio>
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

} // namespace

int reportCommand(const std::string& storePath, const std::string& run, int64_t fromStep) {
    RunStore store(storePath);
    const RunRecord r = requireRun(store, run);
    const RunReport report = buildRunReport(store, r, store.metrics(r.id, fromStep - 1), fromStep);
    std::printf("run %lld  %s  (%s, %s)\n", static_cast<long long>(r.id), r.name.c_str(), r.layout.c_str(),
                r.state.c_str());
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

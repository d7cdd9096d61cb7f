#pragma once

#include "core/spec/RunSpec.h"
#include "core/store/RunReport.h"
#include "core/store/StoreTypes.h"
#include "core/telemetry/Events.h"
#include "ui/models/MetricSeries.h"

#include <QString>

#include <array>
#include <memory>
#include <optional>
#include <vector>

namespace parallax {

class RunStore;

// The step metrics the Compare page can overlay.
enum class CompareMetric { Loss, TokensPerSecond, Mfu, LearningRate, GradNorm, StepMs, Count };

// What the Compare page shows of one run: its record, its spec as read back from the store, its
// step metrics, and one plottable series per metric (built with the data, off the GUI thread).
struct CompareRun {
    RunRecord record;
    std::optional<RunSpec> spec; // empty when the stored spec could not be read (specError says why)
    QString specError;
    std::vector<StepEvent> metrics; // its own steps
    // Devices and pipeline bubbles over the steps after the first (warm-up), when read from a store.
    std::optional<RunReport> report;
    std::array<std::shared_ptr<MetricSeries>, size_t(CompareMetric::Count)> series;
    // A resumed run (or one gone on after a lost host) is drawn as its lineage: the runs it
    // continues, oldest first, each up to the step the next took over from (empty: none).
    std::vector<int64_t> continues;
    // Those runs' steps as drawn (each up to where the next took over), and how long they ran:
    // the summary's throughput and duration cover the whole lineage.
    std::vector<StepEvent> earlier;
    double earlierSeconds = 0;

    QString title() const; // "#12 qwen-image-dp2", "#14 elastic (continues #12, #13)"
    std::shared_ptr<const MetricSeries> seriesOf(CompareMetric metric) const { return series[size_t(metric)]; }

    // Builds a run from what the store returned (specs parsed, series filled). `earlier`: the steps
    // of the runs it continues, drawn before its own in the series (its figures are its own).
    static CompareRun fromRows(RunRecord record, std::vector<StepEvent> metrics,
                               const std::vector<StepEvent>& earlier = {});
    // Reads one run with its report; nullopt when the store has no such run.
    static std::optional<CompareRun> load(const RunStore& store, int64_t id);
    static QString metricName(CompareMetric metric);
};

} // namespace parallax

#include "ui/models/CompareRun.h"

#include "core/spec/SpecIO.h"
#include "core/store/RunStore.h"

#include <QCoreApplication>

namespace parallax {

QString CompareRun::title() const {
    return QStringLiteral("#%1 %2").arg(record.id).arg(QString::fromStdString(record.name));
}

QString CompareRun::metricName(CompareMetric metric) {
    switch (metric) {
    case CompareMetric::Loss: return QCoreApplication::translate("CompareRun", "Loss");
    case CompareMetric::TokensPerSecond: return QCoreApplication::translate("CompareRun", "Tokens/s");
    case CompareMetric::Mfu: return QCoreApplication::translate("CompareRun", "MFU (%)");
    case CompareMetric::LearningRate: return QCoreApplication::translate("CompareRun", "Learning rate");
    case CompareMetric::GradNorm: return QCoreApplication::translate("CompareRun", "Gradient norm");
    case CompareMetric::StepMs: return QCoreApplication::translate("CompareRun", "Step time (ms)");
    case CompareMetric::Count: break;
    }
    return {};
}

CompareRun CompareRun::fromRows(RunRecord record, std::vector<StepEvent> metrics) {
    CompareRun out;
    out.record = std::move(record);
    try {
        out.spec = parseSpec(out.record.spec_toml, "run " + std::to_string(out.record.id) + " spec");
    } catch (const SpecError& e) {
        out.specError = QString::fromStdString(e.what());
    }
    out.metrics = std::move(metrics);
    // Wall time counts from the run's start, so runs started on different days line up (from its
    // first step when the start time is missing or later, as for a run whose clock was off).
    double origin = out.record.started_at;
    if (!out.metrics.empty() && (origin <= 0 || origin > out.metrics.front().t)) origin = out.metrics.front().t;
    for (auto& s : out.series) {
        s = std::make_shared<MetricSeries>();
        s->reserve(out.metrics.size());
        if (origin > 0) s->setTimeOrigin(origin);
    }
    for (const StepEvent& e : out.metrics) {
        const double step = double(e.step);
        const double tokens = double(e.tokens);
        const double values[] = {e.loss, e.tokens_per_s, e.mfu * 100.0, e.lr, e.grad_norm, e.step_ms};
        for (size_t m = 0; m < out.series.size(); ++m) out.series[m]->append(step, e.t, tokens, values[m]);
    }
    return out;
}

std::optional<CompareRun> CompareRun::load(const RunStore& store, int64_t id) {
    std::optional<RunRecord> record = store.run(id);
    if (!record) return std::nullopt;
    std::vector<StepEvent> metrics = store.metrics(id);
    // The first step pays for allocation and warm-up (as SummaryModel leaves it out of medians).
    const int64_t from = metrics.size() > 1 ? metrics.front().step + 1 : 0;
    RunReport report = buildRunReport(store, *record, metrics, from);
    CompareRun run = fromRows(std::move(*record), std::move(metrics));
    run.report = std::move(report);
    return run;
}

} // namespace parallax

#include "ui/models/CompareRun.h"

#include "core/spec/SpecIO.h"
#include "core/store/RunStore.h"

#include <QCoreApplication>
#include <QStringList>

#include <algorithm>
#include <limits>

namespace parallax {

QString CompareRun::title() const {
    QString t = QStringLiteral("#%1 %2").arg(record.id).arg(QString::fromStdString(record.name));
    if (continues.empty()) return t;
    QStringList ids;
    for (int64_t id : continues) ids << QStringLiteral("#%1").arg(id);
    return QCoreApplication::translate("CompareRun", "%1 (continues %2)").arg(t, ids.join(QStringLiteral(", ")));
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

CompareRun CompareRun::fromRows(RunRecord record, std::vector<StepEvent> metrics, const std::vector<StepEvent>& earlier) {
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
    if (!earlier.empty() && (origin <= 0 || origin > earlier.front().t)) origin = earlier.front().t;
    for (auto& s : out.series) {
        s = std::make_shared<MetricSeries>();
        s->reserve(earlier.size() + out.metrics.size());
        if (origin > 0) s->setTimeOrigin(origin);
    }
    const std::vector<StepEvent>& own = out.metrics;
    for (const std::vector<StepEvent>* rows : {&earlier, &own}) {
        for (const StepEvent& e : *rows) {
            const double step = double(e.step);
            const double tokens = double(e.tokens);
            const double values[] = {e.loss, e.tokens_per_s, e.mfu * 100.0, e.lr, e.grad_norm, e.step_ms};
            for (size_t m = 0; m < out.series.size(); ++m) out.series[m]->append(step, e.t, tokens, values[m]);
        }
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
    // The runs it continues, nearest first: each one's steps before the next took over.
    std::vector<int64_t> line = store.lineage(id);
    line.erase(std::find(line.begin(), line.end(), id), line.end());
    std::vector<int64_t> continues;
    std::vector<StepEvent> earlierSteps;
    double earlierSeconds = 0;
    int64_t before = metrics.empty() ? std::numeric_limits<int64_t>::max() : metrics.front().step;
    for (auto it = line.rbegin(); it != line.rend(); ++it) {
        std::vector<StepEvent> earlier = store.metrics(*it);
        earlier.erase(std::remove_if(earlier.begin(), earlier.end(), [&](const StepEvent& e) { return e.step >= before; }),
                      earlier.end());
        if (earlier.empty()) continue;
        before = earlier.front().step;
        earlierSteps.insert(earlierSteps.begin(), earlier.begin(), earlier.end());
        continues.insert(continues.begin(), *it);
        if (const std::optional<RunRecord> r = store.run(*it); r && r->started_at > 0)
            earlierSeconds += std::max(0.0, (r->ended_at > 0 ? r->ended_at : earlier.back().t) - r->started_at);
    }
    CompareRun run = fromRows(std::move(*record), std::move(metrics), earlierSteps);
    run.report = std::move(report);
    run.continues = std::move(continues);
    run.earlier = std::move(earlierSteps);
    run.earlierSeconds = earlierSeconds;
    return run;
}

} // namespace parallax

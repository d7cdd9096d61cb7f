#include "ui/models/PipelineRunModel.h"

#include "core/spec/Estimates.h"
#include "core/spec/ModelDims.h"
#include "core/spec/SpecIO.h"
#include "core/spec/StageBalance.h"
#include "core/store/RunStore.h"
#include "ui/models/StoreWatcher.h"

#include <QStringList>

#include <exception>
#include <string>
#include <utility>

namespace parallax {

PipelineRunModel::PipelineRunModel(StoreWatcher* watcher, QObject* parent) : QObject(parent), m_watcher(watcher) {
    m_refreshTimer.setSingleShot(true);
    m_refreshTimer.setInterval(kStepsRefreshMs);
    connect(&m_refreshTimer, &QTimer::timeout, this, &PipelineRunModel::refreshSteps);
    if (m_watcher) connect(m_watcher, &StoreWatcher::polled, this, &PipelineRunModel::onPolled);
}

PipelineRunModel::RunSteps PipelineRunModel::read(const RunStore& store, qint64 run) {
    RunSteps r;
    // The record first: a run seen ended has written all its spans before.
    r.record = store.run(run);
    if (!r.record) return r;
    r.ended = isTerminal(r.record->state);
    r.steps = store.spanSteps(run);
    if (!r.ended && !r.steps.empty()) r.steps.pop_back();
    if (r.record->spec_toml.empty()) {
        r.scheduleWhy = tr("the run has no spec stored, so its schedule is not known");
        return r;
    }
    try {
        const RunSpec spec = parseSpec(r.record->spec_toml, "run " + std::to_string(run) + " spec");
        SpanModel::Schedule s;
        s.stages = spec.parallel.pp;
        s.microbatches = spec.accumulation();
        s.virtualStages = spec.parallel.virtual_stages;
        s.kind = spec.parallel.schedule;
        r.schedule = s;
        r.spanEvery = spec.telemetry.span_every;
        r.dp = spec.parallel.dp;
        r.tp = spec.parallel.tp;
        if (spec.parallel.pp > 1) r.stageSplit = stageSplitText(spec, store.events<UnitTimeEvent>(run));
    } catch (const std::exception& e) {
        r.scheduleWhy = QString::fromStdString(e.what());
    }
    return r;
}

namespace {

QString blocksText(const std::vector<int64_t>& blocks) {
    QStringList parts;
    for (int64_t b : blocks) parts << QString::number(b);
    return QStringLiteral("[%1]").arg(parts.join(QStringLiteral(", ")));
}

// Each stage's time, "1.50 / 2.25".
QString stageTimesText(const std::vector<double>& ms) {
    QStringList parts;
    for (double v : ms) parts << QString::number(v, 'f', 2);
    return parts.join(QStringLiteral(" / "));
}

} // namespace

QString PipelineRunModel::stageSplitText(const RunSpec& spec, const std::vector<UnitTimeEvent>& times) {
    std::vector<int64_t> blocks;
    try {
        blocks = pipelinePieces(spec, resolveModel(spec.model));
    } catch (const std::exception&) {
        return {};
    }
    const bool measured = spec.parallel.stage_split == StageSplit::Profile;
    const QString how = measured                              ? tr("by measured time")
                        : spec.parallel.stage_layers.empty() ? tr("by FLOPs")
                                                             : tr("as stage_layers says");
    const QString split = tr("blocks per stage %1 %2").arg(blocksText(blocks), how);
    if (times.empty()) return split;
    std::vector<MeasuredUnit> units;
    for (const UnitTimeEvent& t : times) units.push_back({t.unit, t.forward_ms, t.backward_ms});
    try {
        RunSpec byFlops = spec;
        byFlops.parallel.stage_layers.clear();
        byFlops.parallel.stage_split = StageSplit::Flops;
        const StageBalance mine = balanceStages(spec, units);
        const StageBalance flops = balanceStages(byFlops, units);
        return tr("%1: slowest stage %2 ms per micro-batch (by FLOPs %3: %4 ms); each stage %5 ms (by FLOPs %6 ms)")
            .arg(split)
            .arg(mine.slowestBefore(), 0, 'f', 2)
            .arg(blocksText(flops.before_layers))
            .arg(flops.slowestBefore(), 0, 'f', 2)
            .arg(stageTimesText(mine.before_ms), stageTimesText(flops.before_ms));
    } catch (const std::exception&) {
        return split; // times of another model than the spec's: the split alone
    }
}

void PipelineRunModel::setRun(qint64 run) {
    if (run == m_run) return;
    m_run = run;
    ++m_generation;
    m_steps = RunSteps{};
    m_wantedSpans.reset();
    m_spansStep.reset();
    m_spans.clear();
    m_spansUnannounced = false;
    m_bubbles.clear();
    m_bubbles.setTheoretical(std::nullopt);
    m_refreshTimer.stop();
    if (run > 0) refreshSteps();
}

void PipelineRunModel::setActive(bool on) {
    if (on == m_active) return;
    m_active = on;
    if (!on) {
        m_refreshTimer.stop();
        return;
    }
    if (m_run <= 0) return;
    if (m_spansUnannounced) {
        m_spansUnannounced = false;
        emit spansRead(*m_spansStep);
    }
    // The steps may have grown meanwhile; the spans and bubbles wished for are read now.
    refreshSteps();
    if (m_wantedSpans && m_wantedSpans != m_spansStep) readSpans();
    readBubbles();
}

void PipelineRunModel::refreshSteps() {
    if (!m_watcher || m_run <= 0) return;
    if (!m_active) return; // read when active again
    if (m_stepsInFlight) {
        m_stepsAgain = true;
        return;
    }
    m_stepsInFlight = true;
    m_stepsAgain = false;
    const qint64 run = m_run;
    const uint64_t generation = m_generation;
    m_watcher->read<RunSteps>(
        this, [run](const RunStore& store) { return read(store, run); },
        [this, generation](RunSteps r) { applySteps(generation, std::move(r)); },
        [this, generation](const QString& message) {
            m_stepsInFlight = false;
            if (generation != m_generation) {
                // The run chosen meanwhile has not been read yet.
                if (m_run > 0) refreshSteps();
                return;
            }
            emit stepsFailed(message);
        });
}

void PipelineRunModel::applySteps(uint64_t generation, RunSteps r) {
    m_stepsInFlight = false;
    if (generation != m_generation) {
        if (m_run > 0) refreshSteps();
        return;
    }
    if (m_stepsAgain) {
        // The store changed while this was read; read again, but announce what came.
        QTimer::singleShot(0, this, &PipelineRunModel::refreshSteps);
    }
    m_steps = std::move(r);
    emit stepsRead();
    readBubbles();
}

void PipelineRunModel::requestSpans(int64_t step) {
    m_wantedSpans = step;
    readSpans();
}

void PipelineRunModel::readSpans() {
    if (!m_watcher || m_run <= 0 || !m_wantedSpans || m_spansInFlight || !m_active) return;
    m_spansInFlight = true;
    const qint64 run = m_run;
    const uint64_t generation = m_generation;
    const int64_t step = *m_wantedSpans;
    m_watcher->read<std::vector<SpanEvent>>(
        this, [run, step](const RunStore& store) { return store.spans(run, step); },
        [this, generation, step](std::vector<SpanEvent> spans) {
            m_spansInFlight = false;
            // Only the newest wish counts; it is read now if it is another.
            if (generation != m_generation || !m_wantedSpans || step != *m_wantedSpans) {
                readSpans();
                return;
            }
            m_spans = std::move(spans);
            m_spansStep = step;
            // Laid out by the page only when it is in view.
            m_spansUnannounced = !m_active;
            if (m_active) emit spansRead(step);
        },
        [this, generation, step](const QString& message) {
            m_spansInFlight = false;
            if (generation != m_generation || !m_wantedSpans || step != *m_wantedSpans) {
                readSpans();
                return;
            }
            emit spansFailed(message);
        });
}

void PipelineRunModel::readBubbles() {
    if (!m_watcher || m_run <= 0 || m_bubblesInFlight || !m_active) return;
    const std::vector<int64_t> wanted = m_bubbles.missing(m_steps.steps, kBubbleStepsPerRead);
    if (wanted.empty()) return;
    m_bubblesInFlight = true;
    const qint64 run = m_run;
    const uint64_t generation = m_generation;
    m_watcher->read<std::vector<BubbleHistory::Step>>(
        this, [run, wanted](const RunStore& store) { return BubbleHistory::read(store, run, wanted); },
        [this, generation](std::vector<BubbleHistory::Step> steps) {
            m_bubblesInFlight = false;
            if (generation == m_generation) {
                m_bubbles.append(steps);
                emit bubblesRead();
            }
            // The next batch, or the first of another run chosen meanwhile.
            readBubbles();
        },
        [this](const QString&) { m_bubblesInFlight = false; });
}

void PipelineRunModel::onPolled() {
    if (m_run <= 0 || m_steps.ended || !m_active || m_refreshTimer.isActive()) return;
    m_refreshTimer.start();
}

} // namespace parallax

#include "ui/models/LiveSummary.h"

#include "ui/models/ResumeCheck.h"

#include "core/util/Duration.h"
#include "ui/models/RunColors.h"

#include <QDateTime>
#include <QStringList>

#include <algorithm>
#include <climits>
#include <cmath>

namespace parallax {

namespace {

QString q(const std::string& s) {
    return QString::fromStdString(s);
}

QString durationText(double seconds) {
    return q(formatDuration(std::max(0.0, seconds), " "));
}

QString formatRate(double v) {
    if (!std::isfinite(v)) return QStringLiteral("-");
    if (v >= 1e9) return QString::number(v / 1e9, 'f', 2) + QLatin1Char('G');
    if (v >= 1e6) return QString::number(v / 1e6, 'f', 2) + QLatin1Char('M');
    if (v >= 1e3) return QString::number(v / 1e3, 'f', 1) + QLatin1Char('k');
    return QString::number(v, 'f', 0);
}

bool failedOrLost(const std::optional<RunRecord>& r) {
    return r && (r->state == RunState::Failed || r->state == RunState::Lost);
}

QString failureText(const RunRecord& r) {
    QString text = r.state == RunState::Lost ? LiveSummary::tr("Lost") : LiveSummary::tr("Failed");
    if (r.last_step >= 0) {
        const int64_t done = stepsDoneAfter(r.last_step);
        text += done == 1 ? LiveSummary::tr(" after 1 step") : LiveSummary::tr(" after %1 steps").arg(done);
    }
    text += QStringLiteral(": ") + (r.exit_reason.empty() ? LiveSummary::tr("no reason was recorded") : q(r.exit_reason));
    if (r.exit_code) text += LiveSummary::tr(" (exit code %1)").arg(*r.exit_code);
    return text;
}

} // namespace

LiveSummary LiveSummary::of(const RunSnapshot& snapshot, const Context& context) {
    LiveSummary s;
    s.describeRecord(snapshot, context);
    s.describePace(snapshot, context);
    s.describeStraggler(snapshot);
    if (const auto bad = snapshot.firstNonFiniteLossStep())
        s.lossWarning = tr("The loss is not a number from step %1 on (NaN or infinite).").arg(*bad);
    s.describeResumed(snapshot, context);
    s.describeStart(snapshot);
    s.describeRecovered(snapshot);
    const std::optional<RunState> state =
        snapshot.record() ? std::optional<RunState>(snapshot.record()->state) : std::nullopt;
    s.stopEnabled = !context.commandBusy && (state == RunState::Running || state == RunState::Queued);
    s.resumeRefused = context.resumeRefused;
    s.resumeEnabled = !context.commandBusy && state && ResumeCheck::resumableState(*state) && s.resumeRefused.isEmpty();
    return s;
}

void LiveSummary::describeRecord(const RunSnapshot& snapshot, const Context& context) {
    const std::optional<RunRecord>& record = snapshot.record();
    if (!record) {
        title = context.run > 0 ? tr("Run %1").arg(context.run) : tr("No run selected");
        return;
    }
    title = tr("%1 #%2").arg(q(record->name)).arg(record->id);
    state = q(runStateName(record->state));
    const QColor color = RunColors::stateColor(record->state);
    stateStyle = QStringLiteral("QLabel { color: white; background: %1; border-radius: 3px; padding: 2px 6px; }")
                     .arg(color.isValid() ? color.name() : QStringLiteral("#757575"));
    stateTip = q(record->exit_reason);
    if (failedOrLost(record)) failure = failureText(*record);
}

QString LiveSummary::progressText(const RunSnapshot& snapshot) {
    const int64_t total = snapshot.stepsTotal();
    const int64_t done = snapshot.stepsDone();
    if (total <= 0) return tr("step %1").arg(done);
    return tr("step %1 / %2").arg(done).arg(total);
}

void LiveSummary::describePace(const RunSnapshot& snapshot, const Context& context) {
    const int64_t total = snapshot.stepsTotal();
    progressMaximum = static_cast<int>(std::clamp<int64_t>(total > 0 ? total : 1, 1, INT_MAX));
    progressValue = static_cast<int>(std::clamp<int64_t>(snapshot.stepsDone(), 0, progressMaximum));
    progress = progressText(snapshot);
    const auto fraction = snapshot.progress();
    progressFormat = fraction ? tr("%1 (%2%)").arg(progress).arg(*fraction * 100.0, 0, 'f', 1) : progress;

    const auto etaSeconds = snapshot.etaSeconds();
    const auto sps = snapshot.stepsPerSecond();
    eta.text = etaSeconds ? tr("ETA %1").arg(durationText(*etaSeconds)) : QString();
    eta.tip = sps ? tr("%1 steps/s (the median step of the last %2)").arg(*sps, 0, 'g', 3).arg(RunSnapshot::kWindowSteps)
                  : QString();
    const std::optional<double> stalled = snapshot.stalledFor(context.now);
    if (stalled) {
        // No pace while nothing moves: the figures of the steps before would be stale.
        eta.text = tr("no step for %1").arg(durationText(*stalled));
        eta.tip = tr("The ETA comes back with the next step.");
    }
    const auto& last = snapshot.lastStep();
    if (!last) return;
    const std::optional<double> median = snapshot.recentTokensPerSecond();
    rate = stalled ? tr("– tok/s") : tr("%1 tok/s").arg(formatRate(median.value_or(last->tokens_per_s)));
    rateTip = tr("median of the last %1 steps; step %2: %3 tok/s, %4 ms on rank 0 (fastest rank %5 ms, slowest %6 ms "
                 "on rank %7)")
                  .arg(RunSnapshot::kWindowSteps)
                  .arg(last->step)
                  .arg(formatRate(last->tokens_per_s))
                  .arg(last->step_ms, 0, 'f', 1)
                  .arg(last->step_ms_min, 0, 'f', 1)
                  .arg(last->step_ms_max, 0, 'f', 1)
                  .arg(last->slowest_rank);
    mfu = std::isfinite(last->mfu) ? tr("MFU %1%").arg(last->mfu * 100.0, 0, 'f', 1) : QString();
    if (snapshot.runStart() && snapshot.runStart()->peak_flops > 0)
        mfuTip = tr("model FLOPs utilization against a dense peak of %1 TFLOP/s per device")
                     .arg(snapshot.runStart()->peak_flops / 1e12, 0, 'f', 1);
}

void LiveSummary::describeStraggler(const RunSnapshot& snapshot) {
    // The supervisor's straggler alert, from each rank's compute time, says more than the spread
    // of step times; this banner is for runs without one.
    const std::vector<RunAlert> active = snapshot.activeAlerts();
    const bool alerted = std::any_of(active.begin(), active.end(), [](const RunAlert& a) { return a.kind == AlertKind::Straggler; });
    straggler = alerted ? std::nullopt : snapshot.straggler();
    if (!straggler) return;
    QString where;
    if (snapshot.runStart()) {
        const RunStartEvent& rs = *snapshot.runStart();
        const size_t r = static_cast<size_t>(straggler->rank);
        if (r < rs.hosts.size()) where = q(rs.hosts[r]);
        if (r < rs.devices.size()) where += (where.isEmpty() ? QString() : QStringLiteral(", ")) + q(rs.devices[r]);
    }
    stragglerText = tr("Straggler: rank %1%2 was the slowest in %3 of the last %4 steps; "
                       "step times differ by %5% (median). Click to see its log.")
                        .arg(straggler->rank)
                        .arg(where.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(where))
                        .arg(straggler->slowestSteps)
                        .arg(straggler->windowSteps)
                        .arg(straggler->spread * 100.0, 0, 'f', 0);
}

void LiveSummary::describeResumed(const RunSnapshot& snapshot, const Context& context) {
    const std::optional<int64_t> parent = snapshot.parentRun();
    if (!parent) return;
    const std::optional<RunRecord>& r = context.parent;
    Text from;
    from.text = r ? tr("Resumed from #%1 (%2)").arg(*parent).arg(q(r->name)) : tr("Resumed from #%1").arg(*parent);
    if (const std::optional<int64_t> step = snapshot.resumedAtStep()) from.text += tr(" at step %1").arg(*step);
    from.tip = tr("This run continues #%1 from its checkpoint; its curves start where it took over").arg(*parent);
    resumedFrom = from;
    openParent = tr("Open #%1").arg(*parent);
}

void LiveSummary::describeStart(const RunSnapshot& snapshot) {
    // Between Launch and the first step (seconds to minutes: processes start, a model loads) a
    // running run says what it waits for, not "step 0 / 300".
    const std::optional<RunRecord>& record = snapshot.record();
    if (!record || record->state != RunState::Running || snapshot.lastStep()) return;
    const int ranks = snapshot.runStart() ? snapshot.runStart()->world : record->world_size;
    if (snapshot.runStart())
        progress = ranks == 1 ? tr("1 rank started · waiting for the first step")
                              : tr("%1 ranks started · waiting for the first step").arg(ranks);
    else if (ranks > 0)
        progress = ranks == 1 ? tr("starting 1 rank…") : tr("starting %1 ranks…").arg(ranks);
    else
        progress = tr("starting…");
    progressFormat = progress;
}

void LiveSummary::describeRecovered(const RunSnapshot& snapshot) {
    for (const RunAlert& a : snapshot.clearedAlerts()) {
        if (a.kind != AlertKind::Hang) continue;
        const QString at = QDateTime::fromSecsSinceEpoch(qint64(a.t)).toString(QStringLiteral("HH:mm:ss"));
        recovered.text = tr("Recovered at %1 from a hang%2.")
                             .arg(at)
                             .arg(a.step >= 0 ? tr(" at step %1").arg(a.step) : QString());
        recovered.tip = tr("What the supervisor said while it lasted: %1").arg(q(a.message));
    }
}

LiveSummary::Text LiveSummary::slurmJob(const SlurmJob& j, bool runEnded, qint64 now) {
    Text out;
    out.text = tr("Slurm job %1 · %2").arg(q(j.job_id), q(j.state));
    if (!j.reason.empty()) out.text += QStringLiteral(" (%1)").arg(q(j.reason));
    if (j.queue_position > 0 && j.state == "PENDING") out.text += tr(" · place %1 in the queue").arg(j.queue_position);
    if (j.time_left_s >= 0 && !runEnded) {
        // As Slurm said it then, less the time since.
        const double left = std::max(0.0, double(j.time_left_s) - (now - j.t));
        out.text += tr(" · %1 left").arg(durationText(left));
    }
    out.tip = tr("%1 job%2; Slurm's state as of %3")
                  .arg(j.mode == SlurmMode::Batch ? tr("A batch") : tr("An srun"))
                  .arg(j.nodes.empty() ? QString() : tr(" on %1").arg(q(j.nodes)))
                  .arg(QDateTime::fromSecsSinceEpoch(qint64(j.t)).toString(QStringLiteral("HH:mm:ss")));
    return out;
}

QString LiveSummary::alertLines(const std::vector<RunAlert>& active) {
    QStringList lines;
    for (const RunAlert& a : active) {
        QString kind = QString::fromLatin1(alertKindName(a.kind));
        if (!kind.isEmpty()) kind[0] = kind[0].toUpper();
        lines << kind + QStringLiteral(": ") + q(a.message);
    }
    return lines.join(QChar('\n'));
}

} // namespace parallax

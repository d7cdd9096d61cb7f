#include "ui/models/RunDetail.h"

#include "core/spec/Estimates.h"
#include "ui/models/RunListModel.h"

#include <QDateTime>
#include <QStringList>

#include <algorithm>
#include <tuple>

namespace parallax {

namespace {

QString q(const std::string& s) {
    return QString::fromStdString(s);
}

RunDetail::Link linkTo(const RunRecord& r) {
    const QString name = r.name.empty() ? QString() : QLatin1Char(' ') + q(r.name);
    return {r.id, QStringLiteral("#%1%2 (%3)").arg(r.id).arg(name, q(runStateName(r.state)))};
}

bool saysWhyItEnded(RunState state) {
    return state == RunState::Failed || state == RunState::Stopped || state == RunState::Lost;
}

} // namespace

QString RunDetail::hint() {
    return tr("Select a run to see why it ended, its checkpoints, its launch command and its lineage.");
}

QString RunDetail::noCheckpoints() {
    return tr("No checkpoint yet.");
}

QString RunDetail::timeText(double t) {
    return QDateTime::fromMSecsSinceEpoch(qint64(t * 1000.0)).toString(QStringLiteral("yyyy-MM-dd HH:mm:ss"));
}

// The reason a run ended with its exit code, e.g. "NCCL timeout (exit code 1)".
static QString reasonText(const RunRecord& r) {
    const QString reason = q(r.exit_reason).trimmed();
    if (r.exit_code && !reason.isEmpty()) return RunDetail::tr("%1 (exit code %2)").arg(reason).arg(*r.exit_code);
    if (r.exit_code) return RunDetail::tr("exit code %1").arg(*r.exit_code);
    if (!reason.isEmpty()) return reason;
    return RunDetail::tr("no reason recorded");
}

RunDetail RunDetail::of(const RunListModel& runs, int64_t id) {
    RunDetail d;
    const std::optional<RunRecord> found = id ? runs.run(id) : std::nullopt;
    if (!found) return d;
    const RunRecord& r = *found;
    d.run = r.id;
    d.title = r.name.empty() ? tr("Run #%1").arg(r.id) : tr("Run #%1 %2").arg(r.id).arg(q(r.name));
    d.state = q(runStateName(r.state));
    if (saysWhyItEnded(r.state)) d.reason = reasonText(r);
    d.started = r.started_at > 0 ? timeText(r.started_at) : tr("not started");
    if (r.ended_at > 0) d.ended = timeText(r.ended_at);
    else d.ended = r.started_at > 0 ? tr("still going") : tr("not started");
    if (r.started_at > 0) {
        const double now = runs.now() > 0 ? runs.now() : double(QDateTime::currentMSecsSinceEpoch()) / 1000.0;
        const double end = r.ended_at > 0 ? r.ended_at : now;
        d.duration = RunListModel::formatDuration(std::max(0.0, end - r.started_at));
    }
    d.runDir = q(r.run_dir);
    d.launchCommand = q(r.launch_command);
    if (r.parent_run) {
        const std::optional<RunRecord> parent = runs.run(*r.parent_run);
        d.continues = parent ? linkTo(*parent) : Link{*r.parent_run, QStringLiteral("#%1").arg(*r.parent_run)};
    }
    // Rows are by descending id: walked backwards, the runs that continue this one come oldest first.
    for (int row = runs.rowCount() - 1; row >= 0; --row) {
        const RunRecord& child = runs.record(row);
        if (child.parent_run && *child.parent_run == r.id) d.continuedBy.push_back(linkTo(child));
    }
    QStringList tags;
    for (const std::string& t : r.tags) tags << q(t);
    d.tags = tags.join(QStringLiteral(", "));
    d.notes = q(r.notes);
    return d;
}

std::vector<RunDetail::Checkpoint> RunDetail::checkpointRows(std::vector<CheckpointEvent> rows) {
    std::sort(rows.begin(), rows.end(), [](const CheckpointEvent& a, const CheckpointEvent& b) {
        return std::tie(a.step, a.t, a.path) > std::tie(b.step, b.t, b.path);
    });
    std::vector<Checkpoint> out;
    out.reserve(rows.size());
    for (const CheckpointEvent& e : rows)
        out.push_back({e.step, e.t > 0 ? timeText(e.t) : QString(),
                       e.bytes > 0 ? q(formatBytes(double(e.bytes))) : QString(), q(e.layout), q(e.path)});
    return out;
}

} // namespace parallax

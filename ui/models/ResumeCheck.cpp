#include "ui/models/ResumeCheck.h"

#include "ui/models/RunListModel.h"

#include <set>

namespace parallax {

namespace {

// The newest run whose parent is `id`, as RunStore::lineage follows a lineage. Rows are by
// descending id: the first one found is the newest.
std::optional<int64_t> newestContinuation(const RunListModel& runs, int64_t id) {
    for (int row = 0; row < runs.rowCount(); ++row) {
        const RunRecord& r = runs.record(row);
        if (r.parent_run && *r.parent_run == id) return r.id;
    }
    return std::nullopt;
}

} // namespace

bool ResumeCheck::resumableState(RunState state) {
    return state == RunState::Stopped || state == RunState::Failed || state == RunState::Lost;
}

ResumeCheck ResumeCheck::of(const RunListModel& runs, int64_t id) {
    ResumeCheck check;
    const std::optional<RunRecord> run = runs.run(id);
    if (!run) return check;
    check.continuedBy = newestContinuation(runs, id);
    if (!check.continuedBy) {
        check.allowed = resumableState(run->state);
        return check;
    }
    std::set<int64_t> seen{id};
    for (std::optional<int64_t> next = check.continuedBy; next && seen.insert(*next).second;
         next = newestContinuation(runs, *next))
        check.latest = next;
    const std::optional<RunRecord> latest = runs.run(*check.latest);
    // "Run #4 already continues this run, and run #5 continues the lineage: resume run #5", or the
    // newest run's state where it is not one to resume ("(running)", "(succeeded)").
    check.why = tr("Run #%1 already continues this run").arg(*check.continuedBy);
    if (*check.latest != *check.continuedBy) check.why += tr(", and run #%1 continues the lineage").arg(*check.latest);
    if (latest && resumableState(latest->state))
        check.why += tr(": resume run #%1").arg(*check.latest);
    else if (latest)
        check.why += QStringLiteral(" (%1)").arg(QString::fromStdString(runStateName(latest->state)));
    return check;
}

} // namespace parallax

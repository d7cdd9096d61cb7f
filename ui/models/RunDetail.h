#pragma once

#include "core/store/StoreTypes.h"
#include "core/telemetry/Events.h"

#include <QCoreApplication>
#include <QString>

#include <cstdint>
#include <optional>
#include <vector>

namespace parallax {

class RunListModel;

// What the Runs page's detail pane says of one run, decided without widgets: its state and, for a
// run that failed, was stopped or was lost, the reason with its exit code; when it started and
// ended and how long it took; its folder and the command it was launched with; the run it
// continues and the runs that continue it; its tags and notes. Its checkpoints come from the store
// (RunStore::checkpoints, read off the GUI thread) and are shown newest first (checkpointRows).
struct RunDetail {
    Q_DECLARE_TR_FUNCTIONS(RunDetail)
public:
    // A run of the lineage: "#3 gpt-text-lr3e3 (failed)".
    struct Link {
        int64_t run = 0;
        QString text;
        bool operator==(const Link& o) const { return run == o.run && text == o.text; }
        bool operator!=(const Link& o) const { return !(*this == o); }
    };
    struct Checkpoint {
        int64_t step = 0;
        QString when;   // "2026-01-05 14:02:11", "" when not recorded
        QString size;   // "3.2 GiB", "" when not recorded
        QString layout; // "dp2 tp1 pp1 zero0"
        QString path;
    };

    int64_t run = 0;    // 0: no run (nothing selected, or a run no longer in the list)
    QString title;      // "Run #12 gpt-text-lr3e3"
    QString state;      // "failed"
    QString reason;     // failed, stopped or lost: "NCCL timeout (exit code 1)"; "" otherwise
    QString started;    // "2026-01-05 14:02:11" or "not started"
    QString ended;      // "2026-01-05 15:10:40" or "still going" / "not started"
    QString duration;   // "1h08m", "" when not started
    QString runDir;     // "" when the run has no folder yet
    QString launchCommand; // "" when not recorded
    std::optional<Link> continues;   // the run it resumed from
    std::vector<Link> continuedBy;   // the runs resumed from it, oldest first
    QString tags;       // "baseline, lr-sweep"
    QString notes;

    // What the pane says when no run is selected.
    static QString hint();
    // What the checkpoints list says while a run has none.
    static QString noCheckpoints();
    // Run `id` as `runs` has it; durations of runs still going end at runs.now() (the current time
    // when the list was given none). A run that is not in the list gives run = 0.
    static RunDetail of(const RunListModel& runs, int64_t id);
    // `rows` newest first: by step, then by time, descending.
    static std::vector<Checkpoint> checkpointRows(std::vector<CheckpointEvent> rows);
    // Seconds since the epoch as local time, "yyyy-MM-dd HH:mm:ss".
    static QString timeText(double t);
};

} // namespace parallax

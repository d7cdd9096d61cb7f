#pragma once

#include "core/store/StoreTypes.h"
#include "ui/models/RunSnapshot.h"

#include <QCoreApplication>
#include <QString>

#include <optional>
#include <vector>

namespace parallax {

// What the Live page shows about one run at a moment, decided from its RunSnapshot: the title and
// the state, why a failed or lost run ended, how far it is, its pace (ETA, tokens/s, MFU), a
// straggler, a loss that is not a number, where a resumed run comes from, and whether Stop and
// Resume can be asked. The page only assigns these to its widgets. A tooltip left unset (nullopt)
// keeps what the widget had.
struct LiveSummary {
    Q_DECLARE_TR_FUNCTIONS(LiveSummary)
public:
    // What the summary needs beside the snapshot.
    struct Context {
        qint64 run = 0;                  // the run shown; 0: none
        bool commandBusy = false;        // a Stop or Resume is under way
        std::optional<RunRecord> parent; // the record of the run this one continues, where known
        QString resumeRefused;           // why a run that ended is not resumed (ResumeCheck); "" if it may be
        double now = 0;                  // seconds since the epoch; 0: no stall is judged
    };
    // A text with its tooltip.
    struct Text {
        QString text;
        QString tip;
    };

    QString title;
    QString state;                    // "" until the run's record is known
    QString stateStyle;
    std::optional<QString> stateTip;  // the reason the run ended
    QString failure;                  // why a failed or lost run ended; "" for any other
    int progressMaximum = 1;
    int progressValue = 0;
    QString progress;                 // "step 100 / 200"; "starting 4 ranks…" before a running run's first step
    QString progressFormat;           // "step 100 / 200 (50.0%)"
    Text eta;
    QString rate;
    std::optional<QString> rateTip;
    QString mfu;
    std::optional<QString> mfuTip;
    std::optional<RunSnapshot::Straggler> straggler; // none while the supervisor names one itself
    QString stragglerText;
    QString lossWarning;              // "" while the loss is finite
    // A hang the supervisor saw clear: "Recovered at 10:02:13 from a hang: ..."; "" when there was
    // none. It stays after the run ends: the run went through it.
    Text recovered;
    std::optional<Text> resumedFrom;  // "Resumed from #3 (base) at step 40"; none for a fresh run
    QString openParent;               // "Open #3"
    bool stopEnabled = false;
    bool resumeEnabled = false;       // Resume, and Resume with changes
    QString resumeRefused;            // their tooltip while a run that continues this one refuses them

    static LiveSummary of(const RunSnapshot& snapshot, const Context& context);

    // "step 100 / 200", "step 7" when the total is unknown.
    static QString progressText(const RunSnapshot& snapshot);
    // The Slurm job a run's ranks run in: its state, Slurm's reason, its place in the queue, the
    // time left as Slurm said it at job.t less the time since (`now`, seconds since the epoch)
    // while the run has not ended.
    static Text slurmJob(const SlurmJob& job, bool runEnded, qint64 now);
    // The supervisor's active alerts, a line each ("Hang: no step for 41 s ...").
    static QString alertLines(const std::vector<RunAlert>& active);

private:
    void describeRecord(const RunSnapshot& snapshot, const Context& context);
    void describePace(const RunSnapshot& snapshot, const Context& context);
    void describeStraggler(const RunSnapshot& snapshot);
    void describeResumed(const RunSnapshot& snapshot, const Context& context);
    void describeStart(const RunSnapshot& snapshot);
    void describeRecovered(const RunSnapshot& snapshot);
};

} // namespace parallax

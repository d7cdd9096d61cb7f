#pragma once

#include "core/store/StoreTypes.h"

#include <QCoreApplication>
#include <QString>

#include <cstdint>
#include <optional>

namespace parallax {

class RunListModel;

// Whether the console offers to resume a run (Resume, Resume with changes…), and why not. A run
// resumes when it stopped, failed or was lost and no run continues it yet. A run that another run
// already continues is refused: resuming it again would start a second branch from its older
// checkpoint beside the continuation, training the same steps twice into a lineage of its own.
// The buttons do not act on the newest run of the lineage instead, since a person who picked one
// run and saw another one resumed, from another checkpoint, would not know which steps were
// trained again; the tooltip names the run that continues this one and the run to resume.
struct ResumeCheck {
    Q_DECLARE_TR_FUNCTIONS(ResumeCheck)
public:
    bool allowed = false;
    std::optional<int64_t> continuedBy; // the newest run that continues this one
    std::optional<int64_t> latest;      // the newest run of the lineage from here on
    QString why;                        // why a run that ended is not resumed; "" otherwise

    // Run `id` as `runs` has it; a run not in the list is not resumed.
    static ResumeCheck of(const RunListModel& runs, int64_t id);
    // Stopped, failed or lost: the states a run is resumed from.
    static bool resumableState(RunState state);
};

} // namespace parallax

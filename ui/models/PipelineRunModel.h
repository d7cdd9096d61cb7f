#pragma once

#include "core/spec/RunSpec.h"
#include "core/store/StoreTypes.h"
#include "core/telemetry/Events.h"
#include "ui/models/BubbleHistory.h"
#include "ui/models/SpanModel.h"

#include <QObject>
#include <QPointer>
#include <QString>
#include <QTimer>

#include <cstdint>
#include <optional>
#include <vector>

namespace parallax {

class RunStore;
class StoreWatcher;

// What the Pipeline page shows of one run, read through the store watcher's thread: the run's
// record with the schedule of its spec, its sampled steps, the spans of one step at a time, and
// the measured bubble of every sampled step (BubbleHistory, read in batches of
// kBubbleStepsPerRead so that the store's thread stays free).
//
// Every read carries the generation it was asked in; setRun() starts a new one, so an answer
// about a run no longer chosen is dropped and the read is made again for the run chosen now. One
// read of each kind is in flight at a time: a wish made meanwhile (steps asked again, another
// step's spans) is read once the answer is in, the newest wish only.
//
// While the store changes and the run has not ended, its steps are read again at most every
// kStepsRefreshMs; an ended run's steps are final once read after its end.
//
// An inactive model (setActive(false): its page is not in view) starts no read: the run chosen and
// the step wished for are kept, an answer already in flight is kept unannounced, and all of it is
// read and announced once it is active again. A run's spans (every rank's, at a thousand ranks a
// great many) are thus read and laid out only for a page that shows them.
class PipelineRunModel : public QObject {
    Q_OBJECT
public:
    static constexpr int kStepsRefreshMs = 1000;
    static constexpr size_t kBubbleStepsPerRead = 200;

    // One read of a run's record and sampled steps.
    struct RunSteps {
        std::optional<RunRecord> record; // none: the run is not in the store
        // Sampled steps whose spans are complete, ascending: the newest sampled step of a run
        // still going is held back, since some ranks may not have written theirs yet.
        std::vector<int64_t> steps;
        bool ended = false; // the record's state is terminal
        // From the run's spec; none when the spec is missing or cannot be read (scheduleWhy).
        std::optional<SpanModel::Schedule> schedule;
        QString scheduleWhy;
        int64_t spanEvery = -1; // telemetry.span_every; -1: not known
        int64_t dp = 0, tp = 0;
        // How the blocks are split among the stages and, where the run kept its units' measured
        // times (parallel.stage_split = "profile"), the slowest stage's time with this split and
        // with the split by FLOPs; empty without a pipeline.
        QString stageSplit;
    };

    explicit PipelineRunModel(StoreWatcher* watcher, QObject* parent = nullptr);

    // Forgets what was read of the previous run and starts reading `run` (0: none).
    void setRun(qint64 run);
    qint64 run() const { return m_run; }
    uint64_t generation() const { return m_generation; }

    // The last read of the chosen run's steps (empty before the first answer).
    const RunSteps& runSteps() const { return m_steps; }
    // Reads the record and the sampled steps again now (once more after the read in flight).
    void refreshSteps();

    // Reads the spans of `step`; spansRead(step) when they are in, unless another step was asked
    // for meanwhile (then that one is read).
    void requestSpans(int64_t step);
    // The spans of the step last announced by spansRead.
    const std::vector<SpanEvent>& spans() const { return m_spans; }
    std::optional<int64_t> spansStep() const { return m_spansStep; }

    // True while steps or spans are being read.
    bool isLoading() const { return m_stepsInFlight || m_spansInFlight; }

    // Whether reads are made (the default); see the class comment.
    void setActive(bool on);
    bool isActive() const { return m_active; }

    const BubbleHistory& bubbleHistory() const { return m_bubbles; }
    // The schedule's bubble drawn as the reference line (SpanModel::theoretical()).
    void setTheoreticalBubble(std::optional<double> fraction) { m_bubbles.setTheoretical(fraction); }

    // What a read of `run` finds, on the store's thread.
    static RunSteps read(const RunStore& store, qint64 run);
    // RunSteps::stageSplit of a run of `spec` whose ranks measured `times` (none: no times kept).
    static QString stageSplitText(const RunSpec& spec, const std::vector<UnitTimeEvent>& times);

signals:
    // runSteps() holds a new answer for the chosen run.
    void stepsRead();
    void stepsFailed(const QString& message);
    void spansRead(qint64 step);
    void spansFailed(const QString& message);
    // bubbleHistory() has more steps.
    void bubblesRead();

private:
    void applySteps(uint64_t generation, RunSteps steps);
    void readSpans();
    void readBubbles();
    void onPolled();

    QPointer<StoreWatcher> m_watcher;
    bool m_active = true;
    bool m_spansUnannounced = false; // m_spans came in while inactive
    qint64 m_run = 0;
    uint64_t m_generation = 0;
    RunSteps m_steps;
    bool m_stepsInFlight = false;
    bool m_stepsAgain = false;
    std::optional<int64_t> m_wantedSpans;
    bool m_spansInFlight = false;
    std::optional<int64_t> m_spansStep;
    std::vector<SpanEvent> m_spans;
    bool m_bubblesInFlight = false;
    BubbleHistory m_bubbles;
    QTimer m_refreshTimer;
};

} // namespace parallax
